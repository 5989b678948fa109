"""A pool: N worker ranks that joined one job, serving the tests of one rank count and data path."""

from __future__ import annotations

import itertools
import os
import selectors
import signal
import subprocess
import time
from collections.abc import Callable

from .._job.frames import PICKLE, Channel
from .._job.shm_files import cleanup_shm_files
from .._job.spawn import child_pids, describe_exit, kill_groups
from .._job.store_server import StoreServer
from .._job.workers import start_worker
from . import worker
from .marker import Variant
from .stacks import format_stacks

__all__ = ["Pool", "PoolError", "Outcome", "Worker", "FAIL_GRACE", "EXIT_WAIT", "ranks_text"]

# Seconds the other ranks get to finish once one rank failed or died; longer
# means they are most likely blocked waiting for it.
FAIL_GRACE = 3.0
# Seconds after which a pool that is still starting says so, and then between its reports.
PROGRESS_FIRST = 2.0
PROGRESS_EVERY = 5.0
# Longest wait for the faulthandler dumps of stuck ranks.
_STACK_WAIT = 1.5
# Seconds workers get to exit on their own at the end of the session.
EXIT_WAIT = 5.0
# Characters of a dead rank's stderr shown in the failure message.
_TAIL_CHARS = 4000
# Seconds a blocking send on a control channel may stall.
_SEND_TIMEOUT = 10.0


def ranks_text(ranks) -> str:
    """List rank numbers in order: "0, 2, 3"."""
    return ", ".join(str(r) for r in sorted(ranks))


class PoolError(Exception):
    """A pool could not be started; the message says why."""


class Worker:
    """One rank process of a pool, with its control channel and files."""

    def __init__(self, rank: int, proc: subprocess.Popen, channel: Channel, prefix: str, wrapped: bool):
        self.rank = rank
        self.proc = proc
        self.pid = proc.pid
        self._wrapped = wrapped
        self.channel = channel
        self.sock = channel.sock
        self.prefix = prefix
        self.main_thread: int | None = None

    def receive(self) -> list | None:
        """Read what is available (the socket is readable); None at end of file."""
        try:
            return self.channel.receive_ready()
        except (TimeoutError, BlockingIOError, InterruptedError):
            return []
        except Exception:  # noqa: BLE001 - a broken or garbled channel: treat the worker as lost
            return None

    def read_file(self, suffix: str, limit: int = _TAIL_CHARS) -> str:
        """Return the end of one of the worker's files ("" when missing)."""
        try:
            with open(self.prefix + suffix, "rb") as f:
                size = f.seek(0, os.SEEK_END)
                f.seek(max(0, size - limit))
                data = f.read()
        except OSError:
            return ""
        text = data.decode("utf-8", errors="replace")
        return f"[...]{text}" if size > limit else text

    def status(self) -> str:
        return describe_exit(self.proc.poll())

    def signal_pid(self) -> int | None:
        """The worker's own process, for signals meant for it alone: proc, or the one child of a
        command that wrapped it (hooks.pytest_rma_rank_command); None if that is gone."""
        if not self._wrapped:
            return self.pid
        children = child_pids(self.pid)
        return children[0] if children else None


def _transport_env(variant: Variant) -> dict[str, str]:
    # None: the environment's RMA_TRANSPORT (or the automatic choice), inherited.
    return {} if variant.transport is None else {"RMA_TRANSPORT": variant.transport}


def _reap_dead(w: Worker) -> None:
    """Collect the exit status of a worker whose channel closed, i.e. that is exiting."""
    # Its group too: a dead worker's test may have left processes behind.
    kill_groups([w.proc], EXIT_WAIT)


class Outcome:
    """What the ranks of a pool did with one test."""

    def __init__(self, size: int):
        self.replies: dict[int, dict] = {}
        self.died: set[int] = set()
        self.pending: set[int] = set(range(size))
        self.timed_out = False
        self.lost_after_reply = False
        self.stacks: dict[int, str] = {}

    def pool_broken(self) -> bool:
        """Whether the pool can no longer serve tests (some rank gone or in an unknown state)."""
        return (
            bool(self.pending or self.died)
            or self.lost_after_reply
            or any(reply.get("retire") for reply in self.replies.values())
        )


class Pool:
    """N worker ranks that joined one job, serving tests one at a time."""

    def __init__(
        self,
        key,
        nprocs: int,
        variant: Variant,
        directory: str,
        lifeline: int,
        ident: int,
        place: Callable[[int, list[str], dict[str, str]], list[str] | None] | None = None,
        store_host: str | None = None,
    ):
        """place(rank, argv, env): the command that starts rank elsewhere (hooks.py), or None;
        store_host: the address the store listens on, which every rank reaches."""
        self.key = key
        self.size = nprocs
        self.workers: list[Worker] = []
        self._seq = itertools.count(1)
        # Stacks of the ranks a Ctrl-C interrupted in the middle of a test: rank -> stack.
        self.interrupted_stacks: dict[int, str] = {}
        self._cleaned = False
        self.store = StoreServer(nprocs, host=store_host) if store_host else StoreServer(nprocs)
        self.store.start()
        self._place = place
        try:
            for rank in range(nprocs):
                self.workers.append(self._spawn(rank, variant, os.path.join(directory, f"p{ident}r{rank}"), lifeline))
        except BaseException:
            self.kill()
            raise

    def _spawn(self, rank: int, variant: Variant, prefix: str, lifeline: int) -> Worker:
        placed_elsewhere = False

        def wrap(argv: list[str], env: dict[str, str]) -> list[str]:
            nonlocal placed_elsewhere
            placed = self._place(rank, argv, env) if self._place is not None else None
            placed_elsewhere = placed is not None
            return placed or argv

        with open(prefix + ".log", "wb") as log:
            proc, channel = start_worker(
                worker.MODULE,
                rank,
                self.size,
                self.store,
                variant.provider,
                worker.CONTROL_FD,
                env={worker.LIFELINE_FD: str(lifeline), worker.FILES: prefix, **_transport_env(variant)},
                pass_fds=(lifeline,),
                wrap=wrap,
                # Output outside of tests (e.g. a crash at import) goes to a file,
                # read when the worker dies; a file never blocks the worker.
                stdout=log,
                stderr=log,
            )
        channel.sock.settimeout(_SEND_TIMEOUT)
        return Worker(rank, proc, channel, prefix, placed_elsewhere)

    # -- start-up ---------------------------------------------------------

    def wait_ready(self, timeout: float, progress: Callable[[int, float], None] | None = None) -> None:
        """Wait until every rank joined the job; raise PoolError (after killing the pool) if not.

        A start that takes long calls progress(ranks joined, seconds so far) after PROGRESS_FIRST
        seconds, then every PROGRESS_EVERY seconds, and once more when every rank joined.
        """
        start = time.monotonic()
        deadline = start + timeout
        next_progress = start + PROGRESS_FIRST
        pending = {w.rank for w in self.workers}
        with selectors.DefaultSelector() as sel:
            for w in self.workers:
                sel.register(w.sock, selectors.EVENT_READ, w)
            while pending:
                now = time.monotonic()
                remaining = deadline - now
                if remaining <= 0:
                    self._fail_start(f"ranks {ranks_text(pending)} did not join the job within {timeout:g} s", pending)
                if progress is not None and now >= next_progress:
                    progress(self.size - len(pending), now - start)
                    next_progress = now + PROGRESS_EVERY
                for key, _ in sel.select(min(remaining, max(0.0, next_progress - now))):
                    w = key.data
                    frames = w.receive()
                    if frames is None:
                        _reap_dead(w)
                        self._fail_start(f"rank {w.rank} exited while starting ({w.status()})", {w.rank})
                    for frame in frames:
                        if frame.get("op") == "ready":
                            w.main_thread = frame.get("main_thread")
                            pending.discard(w.rank)
                        elif frame.get("op") == "failed":
                            self.kill()
                            raise PoolError(f"rank {w.rank} failed to join the job:\n{frame.get('text', '')}")
        if progress is not None and next_progress > start + PROGRESS_FIRST:  # it was shown: say it ended
            progress(self.size, time.monotonic() - start)

    def _fail_start(self, message: str, ranks: set[int]):
        parts = [message]
        for w in self.workers:
            if w.rank in ranks:
                log = w.read_file(".log").strip()
                parts.append(f"---- rank {w.rank} output ----\n{log or '(none)'}")
        self.kill()
        raise PoolError("\n".join(parts))

    # -- running a test ---------------------------------------------------

    def alive(self) -> bool:
        return all(w.proc.poll() is None for w in self.workers)

    def run(self, command: dict, timeout: float | None) -> Outcome:
        """Run one test on every rank and collect what each did."""
        seq = next(self._seq)
        frame = PICKLE.pack(dict(command, seq=seq))
        outcome = Outcome(self.size)
        try:
            self._collect(frame, seq, outcome, timeout)
        except KeyboardInterrupt:
            # Ctrl-C: show where the ranks stood before they are stopped.
            self.interrupted_stacks = self.dump_stacks(outcome.pending)
            raise
        if outcome.pending:
            outcome.stacks = self.dump_stacks(outcome.pending)
        return outcome

    def _collect(self, frame: bytes, seq: int, outcome: Outcome, timeout: float | None) -> None:
        """Send the test to every rank and wait for their replies, deaths, or the deadline."""
        with selectors.DefaultSelector() as sel:
            for w in self.workers:
                try:
                    w.channel.send_packed(frame)
                    sel.register(w.sock, selectors.EVENT_READ, w)
                except OSError:
                    # Died while idle; its status is reported like a death mid-test.
                    outcome.pending.discard(w.rank)
                    outcome.died.add(w.rank)
            deadline = None if timeout is None else time.monotonic() + timeout
            trouble_at = time.monotonic() if outcome.died else None
            while outcome.pending:
                limit = deadline
                if trouble_at is not None:
                    limit = trouble_at + FAIL_GRACE if limit is None else min(limit, trouble_at + FAIL_GRACE)
                remaining = None if limit is None else limit - time.monotonic()
                if remaining is not None and remaining <= 0:
                    outcome.timed_out = trouble_at is None or (deadline is not None and time.monotonic() >= deadline)
                    break
                for key, _ in sel.select(remaining):
                    w = key.data
                    frames = w.receive()
                    if frames is None:
                        sel.unregister(w.sock)
                        _reap_dead(w)
                        if w.rank in outcome.replies:
                            # It finished this test and died afterwards: the test
                            # stands, but the pool is no use any more.
                            outcome.lost_after_reply = True
                            continue
                        outcome.pending.discard(w.rank)
                        outcome.died.add(w.rank)
                        trouble_at = trouble_at or time.monotonic()
                        continue
                    for reply in frames:
                        if reply.get("seq") != seq:
                            continue
                        outcome.replies[w.rank] = reply
                        outcome.pending.discard(w.rank)
                        if reply.get("outcome") == "failed" and trouble_at is None:
                            trouble_at = time.monotonic()

    def dump_stacks(self, ranks: set[int]) -> dict[int, str]:
        """Ask the given ranks for their Python stacks (faulthandler on SIGUSR1)."""
        targets = [w for w in self.workers if w.rank in ranks and w.proc.poll() is None]
        for w in targets:
            pid = w.signal_pid()
            try:
                if pid is not None:
                    os.kill(pid, signal.SIGUSR1)
            except OSError:
                pass
        sizes = {w.rank: -1 for w in targets}
        deadline = time.monotonic() + _STACK_WAIT
        # faulthandler writes from the signal handler at once; wait until every
        # file is non-empty and has stopped growing, or the deadline passes.
        while targets and time.monotonic() < deadline:
            time.sleep(0.05)
            done = True
            for w in targets:
                try:
                    size = os.path.getsize(w.prefix + ".stacks")
                except OSError:
                    size = 0
                if size == 0 or size != sizes[w.rank]:
                    done = False
                sizes[w.rank] = size
            if done:
                break
        return {w.rank: format_stacks(w.read_file(".stacks", 1 << 16), w.main_thread) for w in targets}

    # -- ending -----------------------------------------------------------

    def request_exit(self) -> None:
        """Tell every worker to finalize and exit (returns at once)."""
        for w in self.workers:
            try:
                w.channel.send({"op": "exit"})
            except OSError:
                pass

    def finished(self) -> bool:
        """Clean up and return True if every worker has exited (never blocks)."""
        if all(w.proc.poll() is not None for w in self.workers):
            self._cleanup()
            return True
        return False

    def finish(self, deadline: float) -> None:
        """Wait until the deadline for the workers to exit, then kill what is left."""
        for w in self.workers:
            try:
                w.proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
        self.kill()

    def kill(self) -> None:
        """Kill every worker and whatever it started, and release the pool. Idempotent."""
        kill_groups((w.proc for w in self.workers), EXIT_WAIT)
        self._cleanup()

    def _cleanup(self) -> None:
        if self._cleaned:
            return
        self._cleaned = True
        for w in self.workers:
            w.channel.close()
        self.store.close()
        # Killed ranks cannot unlink the shared-memory files the shm provider
        # named after their pids.
        cleanup_shm_files(w.pid for w in self.workers)
        for w in self.workers:
            for suffix in (".log", ".out", ".err", ".stacks"):
                try:
                    os.unlink(w.prefix + suffix)
                except OSError:
                    pass
