"""Run the ranks of one job until they all exit, and make sure that nothing of it outlives it.

When one rank fails, the others are stopped, and rmarun exits with the failed rank's status.
A rank that exits 0 without rma.finalize() while others still run makes rmarun exit 1.
"""

from __future__ import annotations

import argparse
import collections
import os
import queue
import shlex
import signal
import subprocess
import sys
import threading
import time

from .._job.settings import link_timeout
from .._job.shm_files import cleanup_shm_files
from .._job.spawn import (
    describe_exit,
    exit_status,
    killpg,
    live_groups,
    rank_environment,
    start_rank,
    traceback_label,
)
from .._job.store_server import StoreServer
from .._job.supervisor import supervised_command
from ..compat import MPI4PY_SHIM
from .hosts import is_local, rank_python, remote_command
from .output import PROG, Output, relay, say
from .signals import SignalForwarder
from .stdin_relay import StdinRelay, stdin_for

__all__ = ["Job"]

# Seconds between the polite signal and SIGKILL when stopping ranks.
KILL_GRACE = 3.0
# Lines of each rank's stderr kept for the failure summary.
TAIL_LINES = 200
# Seconds rmarun waits, after a rank's non-zero exit, for the store to see that rank's
# connection end, when it has not yet, before it names the rank that failed first: the store's
# order of deaths is causal (a rank learns of a death from the store, after the store), the
# order in which exits reach rmarun is not. A killed rank's connection ends with it (the wait
# lasts milliseconds); a rank cut off from the store, whose remote shell still reported its
# exit, is found silent by the store about when the rank found the store silent.
STORE_LAG = 2.0


class _Rank:
    """Hold one started rank: its process, output relays and stderr tail."""

    def __init__(self, rank: int, proc: subprocess.Popen, local: bool):
        self.rank = rank
        self.proc = proc
        self.pid = proc.pid  # the rank's own on this machine; on another host, its remote shell's
        self.local = local
        self.returncode: int | None = None
        # Whether rmarun had signalled it before it exited: its status is then rmarun's doing.
        self.stopped = False
        self.tail: collections.deque[bytes] = collections.deque(maxlen=TAIL_LINES)
        self.threads: list[threading.Thread] = []


class Job:
    """Run N ranks of one command until they all exit, and clean up after them."""

    def __init__(self, args: argparse.Namespace, command: list[str], placement: list[str] | None = None):
        self.args = args
        self.command = command
        self.size: int = args.n
        # Each rank's host (--host, --hostfile), or None: every rank on this machine.
        self.placement = placement
        self.events: queue.SimpleQueue = queue.SimpleQueue()
        self.ranks: list[_Rank] = []
        out_lock = threading.Lock()
        # Both streams share one lock so that lines of different ranks, and
        # rmarun's own messages, never interleave mid-line.
        self.stdout = Output(sys.stdout, out_lock)
        self.stderr = Output(sys.stderr, out_lock)
        self.died_per_store: set[int] = set()
        # Ranks that exited while others were still running (without a stop by rmarun). One
        # of them that also left the store without a goodbye (died_per_store: it never called
        # rma.finalize()) failed even with exit status 0: its part of the job is missing, and
        # the others may not have noticed.
        self.left_others_running: set[int] = set()
        # Whether other ranks were still running when the first one failed.
        self.stopped_others = False
        # Whether the rank that failed first went silent (its host or link lost) rather than ended.
        self.cause_unreachable = False
        # The ranks that read rmarun's standard input (--stdin), and the relay that copies it
        # to each of them when they are several.
        self.stdin_readers: list[int] = args.stdin_ranks
        self.stdin_relay = StdinRelay()

    def _on_rank_exit(self, rank: int, clean: bool) -> None:
        # (A store thread.) The exit status decides, except for a rank that exits 0 without
        # finalizing while others run (see left_others_running). A death wakes the main loop,
        # which may be waiting for the store's word on a failed rank (STORE_LAG).
        if not clean:
            self.died_per_store.add(rank)
            self.events.put(("store", rank, None))

    def _environment(self, rank: int, store_address: str, secret: str) -> dict[str, str]:
        # This host's cores are shared among this host's ranks. (A remote rank's command carries
        # no OMP_NUM_THREADS: remote_command passes on only what a rank needs.)
        here = sum(1 for host in self.placement if is_local(host)) if self.placement else self.size
        env = rank_environment(rank, self.size, store_address, secret, self.args.provider, ranks_on_host=here)
        env["RMA_LAUNCHER"] = PROG
        if self.args.mpi4py:
            # Only the ranks find the facade as mpi4py; a real mpi4py elsewhere is untouched.
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [MPI4PY_SHIM, env.get("PYTHONPATH")]))
        return env

    def _wait(self, rank: _Rank) -> None:
        rank.proc.wait()
        self.events.put(("exit", rank.rank, rank.proc.returncode))

    def _start_rank(self, index: int, env: dict[str, str]) -> _Rank:
        # A Ctrl-C on the terminal reaches only rmarun, which forwards it (see spawn.py).
        command = self.command
        host = self.placement[index] if self.placement else None
        local = host is None or is_local(host)
        if not local:
            # Stopping the remote shell's group stops a rank that ssh started only as far as
            # its connection ends; the rank stops itself once this rmarun's store is gone. There
            # a supervisor runs it, and cleans /dev/shm after it (supervisor.py): this rmarun
            # cleans only its own host's.
            carry = ("PYTHONPATH",) if self.args.mpi4py else ()
            supervised = supervised_command(rank_python(self.command), self.command)
            command = remote_command(shlex.split(self.args.rsh), host, supervised, env, carry)
        stdin = stdin_for(index, self.stdin_readers)
        proc = start_rank(command, env, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if proc.stdin is not None:
            self.stdin_relay.add(proc.stdin)
        rank = _Rank(index, proc, local)
        prefix = f"[{index}] ".encode() if self.args.tag_output else None
        for target, args in (
            (relay, (proc.stdout, self.stdout, prefix, None)),
            (relay, (proc.stderr, self.stderr, prefix, rank.tail)),
            (self._wait, (rank,)),
        ):
            thread = threading.Thread(target=target, args=args, name=f"rmarun-rank{index}", daemon=True)
            thread.start()
            rank.threads.append(thread)
        return rank

    def _signal_all(self, sig: int, spare: _Rank | None = None) -> None:
        for rank in self.ranks:
            if rank is not spare:
                if rank.returncode is None:
                    rank.stopped = True
                killpg(rank.pid, sig)

    def run(self) -> int:
        """Run the job and return rmarun's exit status."""
        server = StoreServer(
            self.size,
            host=self.args.store_host,
            port=self.args.store_port,
            on_rank_exit=self._on_rank_exit,
        )
        try:
            server.start()
            with SignalForwarder(self.events):
                try:
                    return self._run(server)
                finally:
                    self.stdin_relay.stop()
                    # Whatever happened (even an exception in rmarun itself),
                    # leave no process of the job behind.
                    self._signal_all(signal.SIGKILL)
                    for rank in self.ranks:
                        if rank.proc.poll() is None:
                            try:
                                rank.proc.wait(timeout=KILL_GRACE)
                            except subprocess.TimeoutExpired:
                                pass
        finally:
            server.close()
            # (The supervisors of the other hosts' ranks clean theirs.)
            cleanup_shm_files(rank.pid for rank in self.ranks if rank.local)

    def _run(self, server: StoreServer) -> int:
        store_address = server.reachable_address
        for index in range(self.size):
            try:
                rank = self._start_rank(index, self._environment(index, store_address, server.secret))
            except OSError as exc:
                say(f"cannot start rank {index} ({shlex.join(self.command)}): {exc.strerror or exc}")
                self._stop(signal.SIGTERM)
                self._wait_for_exits(set(r.rank for r in self.ranks))
                return 127 if isinstance(exc, FileNotFoundError) else 126
            self.ranks.append(rank)
        if len(self.stdin_readers) > 1:
            self.stdin_relay.start()

        running = set(range(self.size))
        # The first rank to fail on its own (non-zero exit before any stop by rmarun): it
        # starts the stop, but the rank named as the cause is the first the store saw die.
        first: _Rank | None = None
        cause: _Rank | None = None
        exit_code: int | None = None
        stopping = False
        kill_at: float | None = None
        decide_by: float | None = None  # while waiting for the store's word on `first`
        deadline = time.monotonic() + self.args.timeout if self.args.timeout else None

        def decide() -> None:
            nonlocal cause, stopping, kill_at, decide_by
            assert first is not None
            cause, decide_by = self._first_failure(server, first), None
            # The cause, ending on its own (its exception shown, its teardown under way), is left
            # to end so: its exit status is the job's. A cause that went silent is stopped too.
            spare = cause if cause.returncode is None and not self.cause_unreachable else None
            self.stopped_others = bool(running - {cause.rank})
            stopping, kill_at = True, self._stop(signal.SIGTERM, spare)

        while running:
            now = time.monotonic()
            # (While the store's word is awaited, the failure is under way: no timeout is due.)
            timeout_at = None if stopping or decide_by is not None else deadline
            wake = [t for t in (kill_at, decide_by, timeout_at) if t is not None]
            try:
                kind, who, value = self.events.get(timeout=max(0.0, min(wake) - now) if wake else None)
            except queue.Empty:
                now = time.monotonic()
                if decide_by is not None and now >= decide_by:
                    decide()
                elif kill_at is not None and now >= kill_at:
                    self._signal_all(signal.SIGKILL)
                    kill_at = None
                elif timeout_at is not None and now >= timeout_at:
                    say(
                        f"timeout after {self.args.timeout:g} s; ranks still running: "
                        + ", ".join(map(str, sorted(running)))
                        + "; interrupting them: each Python rank shows where it stood"
                    )
                    exit_code = 124
                    # SIGINT, as Ctrl-C: a Python rank's blocked call ends with KeyboardInterrupt,
                    # whose traceback comes under the rank's label (rma.init's excepthook).
                    stopping, kill_at = True, self._stop(signal.SIGINT)
                continue

            if kind == "exit":
                rank = self.ranks[who]
                rank.returncode = value
                running.discard(who)
                if running and not stopping:
                    self.left_others_running.add(who)
                if value != 0 and not stopping and first is None:
                    # The exits of ranks rmarun stops afterwards are not failures.
                    first = rank
                    if who in server.ranks_connected():
                        # Its connection's end has not reached the store yet (or, cut off, it
                        # never will): wait for the store a moment, without stopping anyone.
                        decide_by = time.monotonic() + STORE_LAG
                    else:
                        decide()
            elif kind == "store":
                if decide_by is not None and first is not None and first.rank not in server.ranks_connected():
                    decide()
            elif kind == "signal":
                if decide_by is not None:
                    # A failure came first: its stop is what the signal asks for.
                    decide()
                elif not stopping:
                    name = signal.Signals(who).name
                    say(f"got {name}; stopping all ranks")
                    exit_code = 128 + who
                    # Forward the same signal, so that e.g. a rank gets its
                    # KeyboardInterrupt as under a plain python command.
                    stopping, kill_at = True, self._stop(who)
                else:
                    # A second Ctrl-C: the user wants out now.
                    self._signal_all(signal.SIGKILL)
                    kill_at = None
        if decide_by is not None:
            decide()  # every rank ended while the store's word was awaited

        self._reap_groups(kill_at if stopping else None)
        self._finish_relays()
        if cause is not None:
            assert first is not None and first.returncode is not None
            self._report(cause)
            # The cause's own status, when it ended on its own with one; else the first failed
            # exit's (a cause that exited 0, went silent, or that rmarun had to stop).
            own = cause.returncode and not cause.stopped and not self.cause_unreachable
            ended = cause.returncode if own else first.returncode
            return exit_status(ended) if ended else 1
        # (A process's sockets close before its exit is reported: the store has had the time
        # since to see its connection end.)
        unfinalized = sorted(
            who for who in self.left_others_running & self.died_per_store if self.ranks[who].returncode == 0
        )
        if unfinalized and not exit_code:
            for who in unfinalized:
                say(
                    f"rank {who} ended without rma.finalize() (exit status 0) while other ranks were "
                    "still running: its part of the job may be missing"
                )
            exit_code = 1
        return exit_code or 0

    def _first_failure(self, server: StoreServer, first: _Rank) -> _Rank:
        """The rank that failed first: the first whose death the store saw (every rank that
        failed because of it, with PeerError, was told by the store, after that), else `first`,
        the first non-zero exit (a rank that failed outside the job's ranks' knowledge: before
        joining, after finalizing, or not a rank of rma at all)."""
        deaths = server.deaths()
        if not deaths:
            return first
        rank, silent = deaths[0]
        self.cause_unreachable = silent
        return self.ranks[rank]

    def _stop(self, sig: int, spare: _Rank | None = None) -> float:
        """Signal every rank's group (but spare's); return when to send SIGKILL."""
        self._signal_all(sig, spare)
        return time.monotonic() + KILL_GRACE

    def _wait_for_exits(self, ranks: set[int]) -> None:
        """Wait (at most the kill grace period, then SIGKILL) until `ranks` exited."""
        kill_at = time.monotonic() + KILL_GRACE
        while ranks:
            try:
                kind, who, _ = self.events.get(timeout=max(0.0, kill_at - time.monotonic()))
            except queue.Empty:
                self._signal_all(signal.SIGKILL)
                kill_at = time.monotonic() + KILL_GRACE
                continue
            if kind == "exit":
                ranks.discard(who)

    def _reap_groups(self, kill_at: float | None) -> None:
        """Make sure no process of any rank's group survives the ranks themselves.

        While a stop is under way, the children of ranks get the rest of the
        grace period to exit on the signal they got; otherwise (the ranks
        are all gone) whatever they left behind is killed at once.
        """
        while kill_at is not None and time.monotonic() < kill_at:
            if not live_groups(rank.pid for rank in self.ranks):
                return
            time.sleep(0.02)
        self._signal_all(signal.SIGKILL)

    def _finish_relays(self) -> None:
        """Wait until the ranks' remaining output has been relayed."""
        # A process that escaped its group (a new session) may keep a pipe
        # open forever; do not wait for it beyond a moment.
        deadline = time.monotonic() + 2.0
        for rank in self.ranks:
            for thread in rank.threads:
                thread.join(timeout=max(0.0, deadline - time.monotonic()))

    def _report(self, cause: _Rank) -> None:
        """Print the failure summary: which rank failed first and how and, unless its traceback
        was shown under its rank's label already, the end of its stderr."""
        host = self.placement[cause.rank] if self.placement else None
        where = f" on {host}" if host else ""
        stopping = "; stopping the other ranks" if self.stopped_others else ""
        tail = b"".join(cause.tail)
        if self.cause_unreachable:
            # Its exit status, if any reached rmarun, is that of its remote shell, or of its own
            # leaving (it lost the store too): neither says what happened.
            summary = (
                f"{PROG}: rank {cause.rank}{where} became unreachable: its host stopped answering the job's "
                f"store for RMA_LINK_TIMEOUT ({link_timeout():g} s): its link is down, or the host is gone{stopping}"
            )
            if not tail.strip():
                self.stderr.write(f"{summary}\n".encode())
                return
        elif cause.returncode == 0:
            summary = (
                f"{PROG}: rank {cause.rank}{where} ended without rma.finalize() (exit status 0) while other "
                f"ranks were still running: its part of the job is missing{stopping}"
            )
        else:
            how = describe_exit(cause.returncode)
            if host and not is_local(host) and cause.returncode == 255:
                how += ", as ssh ends when it cannot reach the host or run the command there"
            if cause.stopped:
                # It left the job on its own, and did not end within the grace period.
                how = f"left the job without rma.finalize(), then stopped by {PROG}: {how}"
            summary = f"{PROG}: rank {cause.rank}{where} failed ({how}){stopping}"
        if traceback_label(cause.rank).encode() in tail:
            self.stderr.write(f"{summary} (its traceback is above)\n".encode())
            return
        text = f"{summary}\n{PROG}: ---- rank {cause.rank} stderr (last lines) ----\n"
        if tail and not tail.endswith(b"\n"):
            tail += b"\n"
        if not tail:
            tail = b"(no output on stderr)\n"
        end = f"{PROG}: ---- end of rank {cause.rank} stderr ----\n"
        self.stderr.write(text.encode() + tail + end.encode())
