"""Start the ranks of an rma job on this machine: the ``rmarun`` command.

::

    rmarun -n N [--provider P] [--tag-output] [--timeout S] [--store-host H] [--store-port P]
           (script.py [args] | -m module [args] | -c code [args] | program [args...])
    rmarun --serve-store -n N [--store-host H] [--store-port P]
    rmarun --info

rmarun runs the job's rendezvous store (see rma._job.store_server), starts N ranks with
RMA_RANK/RMA_SIZE/RMA_STORE/RMA_SECRET in their environment, relays their
output, and makes sure that no process of the job outlives it: when one rank
fails, the others are stopped, and rmarun exits with the failed rank's status.
"""

from __future__ import annotations

import argparse
import collections
import os
import queue
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from typing import Iterable, Sequence

from ._job.shm_files import cleanup_shm_files
from ._job.store_protocol import parse_address
from ._job.store_server import StoreServer
from .errors import BootstrapError

__all__ = ["main", "print_info", "build_command"]

PROG = "rmarun"
# Seconds between the polite signal and SIGKILL when stopping ranks.
KILL_GRACE = 3.0
# Lines of each rank's stderr kept for the failure summary.
TAIL_LINES = 200
# Longest piece of output read at once, so that a rank writing binary data
# without newlines cannot make rmarun buffer without bound.
_MAX_CHUNK = 64 * 1024

# Launcher options that take a value; everything else starting with "-" is a
# flag.  The command-line splitter below needs to know which is which, to
# find where the launcher's options end and the program's arguments begin.
_VALUE_OPTIONS = {"-n", "--np", "--provider", "--timeout", "--store-host", "--store-port"}

_USAGE = (
    "rmarun -n N [--provider P] [--tag-output] [--timeout S] [--store-host H] [--store-port P]\n"
    "              (script.py [args] | -m module [args] | -c code [args] | program [args...])\n"
    "       rmarun --serve-store -n N [--store-host H] [--store-port P]\n"
    "       rmarun --info"
)


# --------------------------------------------------------------------------
# command line


def build_parser() -> argparse.ArgumentParser:
    """Build the parser of rmarun's own options (the program's are split off before)."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        usage=_USAGE,
        description="Run N ranks of an rma program on this machine.",
        epilog="Everything after the script, program, -m module or -c code is passed "
        "to the ranks unchanged.",
        allow_abbrev=False,  # abbreviations would defeat the argument splitter
    )
    parser.add_argument("-n", "--np", dest="n", type=int, metavar="N", help="number of ranks")
    parser.add_argument(
        "--provider", metavar="P", help='libfabric provider for the ranks (RMA_PROVIDER), e.g. "shm", "tcp"'
    )
    parser.add_argument("--tag-output", action="store_true", help="prefix every output line with [rank]")
    parser.add_argument(
        "--timeout", type=float, metavar="S", help="stop the job and exit 124 after S seconds"
    )
    parser.add_argument(
        "--store-host", default="127.0.0.1", metavar="H", help="address the rendezvous store listens on"
    )
    parser.add_argument(
        "--store-port", type=int, default=0, metavar="P", help="port of the store (default: any free port)"
    )
    parser.add_argument(
        "--serve-store", action="store_true", help="only run a store for ranks started by other means"
    )
    parser.add_argument("--info", action="store_true", help="print the rma and libfabric versions")
    # -m and -c are listed for --help only; split_argv() handles them.
    parser.add_argument("-m", dest="module", metavar="MODULE", help="run a Python module as the ranks")
    parser.add_argument("-c", dest="code", metavar="CODE", help="run Python code as the ranks")
    return parser


def split_argv(argv: Sequence[str]) -> tuple[list[str], list[str] | None, str | None]:
    """Split argv into (launcher options, program argv, kind).

    kind is "-m", "-c", "program" or None (no program).  For -m and -c the
    program argv starts with the module name or the code.  Anything after
    the program belongs to the program, even if it looks like an option of
    rmarun, exactly as with the python command itself.
    """
    own: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            rest = list(argv[i + 1 :])
            return own, (rest or None), ("program" if rest else None)
        if arg in ("-m", "-c"):
            # A missing value is left to argparse, which reports it.
            if i + 1 >= len(argv):
                return own + [arg], None, None
            return own, list(argv[i + 1 :]), arg
        if arg.startswith(("-m", "-c")) and not arg.startswith("--"):
            # Python also accepts the glued forms -mmodule and -c'code'.
            return own, [arg[2:], *argv[i + 1 :]], arg[:2]
        if arg.startswith("-") and arg != "-":
            own.append(arg)
            if arg in _VALUE_OPTIONS and i + 1 < len(argv):
                own.append(argv[i + 1])
                i += 1
            i += 1
            continue
        return own, list(argv[i:]), "program"
    return own, None, None


def build_command(kind: str, program: list[str], python: str | None = None) -> list[str]:
    """Return the argv each rank runs for a program given as split_argv found it.

    Raises FileNotFoundError when a script or program does not exist.
    """
    python = python or sys.executable
    if kind in ("-m", "-c"):
        return [python, kind, *program]
    target, args = program[0], program[1:]
    if target.endswith(".py") and os.path.isfile(target):
        return [python, target, *args]
    if shutil.which(target) is None:
        raise FileNotFoundError(target)
    return [target, *args]


def _advertised_host(host: str) -> str:
    """Return a host name ranks can connect to for a store bound to `host`."""
    if host in ("", "0.0.0.0", "::"):
        # A wildcard address is not something to connect to: name this machine.
        return socket.gethostname()
    return host


def _store_address(server: StoreServer, bind_host: str) -> str:
    _, port = parse_address(server.address)
    host = _advertised_host(bind_host)
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


# --------------------------------------------------------------------------
# small helpers


def _status(returncode: int) -> int:
    """Map a Popen returncode to a shell-style exit status (128+N for signal N)."""
    return 128 - returncode if returncode < 0 else returncode


def _describe_exit(returncode: int) -> str:
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"killed by {name}"
    return f"exit status {returncode}"


def _killpg(pgid: int, sig: int) -> bool:
    """Send sig to a process group; return False when the group is gone."""
    try:
        os.killpg(pgid, sig)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        # The pgid was recycled by someone else's process: not ours to touch.
        return False


def _live_groups(pgids: Iterable[int]) -> set[int]:
    """Return those of the process groups pgids that still have a live member.

    killpg(pgid, 0) alone also succeeds for a group whose members are all
    zombies waiting for init to reap them, which may take a while in a
    container; on Linux /proc tells the zombies apart.
    """
    candidates = {pgid for pgid in pgids if _killpg(pgid, 0)}
    if not candidates or not os.path.isdir("/proc/self"):
        return candidates
    live: set[int] = set()
    try:
        names = os.listdir("/proc")
    except OSError:
        return candidates
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                # The command name may hold spaces and parentheses: parse
                # from the last ")"; then come state, ppid, pgrp.
                fields = f.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if len(fields) > 2 and fields[0] != b"Z" and int(fields[2]) in candidates:
            live.add(int(fields[2]))
    return live


class _Output:
    """Write bytes to a text stream's binary buffer, line-safely across threads.

    Write errors (a closed pipe, as in ``rmarun ... | head``) switch the
    stream off instead of failing, so that ranks are still drained and
    never block on a full pipe.
    """

    def __init__(self, stream, lock: threading.Lock):
        self._stream = stream
        self._lock = lock
        self._broken = False

    def write(self, data: bytes) -> None:
        with self._lock:
            if self._broken:
                return
            try:
                buffer = getattr(self._stream, "buffer", None)
                if buffer is not None:
                    self._stream.flush()  # keep order with text written earlier
                    buffer.write(data)
                    buffer.flush()
                else:
                    self._stream.write(data.decode("utf-8", errors="replace"))
                    self._stream.flush()
            except (OSError, ValueError):
                self._broken = True


def _say(message: str) -> None:
    """Print one launcher message to stderr."""
    try:
        print(f"{PROG}: {message}", file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass


def print_info() -> int:
    """Print the rma version, libfabric's version and providers, and what a job would use."""
    from . import __version__
    from ._native import _core
    from ._job.join import choose_provider

    print(f"rma {__version__}")
    print(f"libfabric {_core.libfabric_version()}")
    usable = _core.usable_providers()
    print(f"usable providers (RDM endpoints with MSG, RMA and ATOMIC): {', '.join(usable) or 'none'}")
    requested = os.environ.get("RMA_PROVIDER", "")
    source = f"RMA_PROVIDER={requested}" if requested else "automatic"
    for where, same_host in (("all ranks on this host", True), ("ranks on several hosts", False)):
        provider, node = choose_provider(requested, same_host)
        bound = f", bound to {node}" if node else ""
        state = "" if provider in usable else "  (NOT available here)"
        print(f"a job with {where}: libfabric provider {provider}{bound} ({source}){state}")
    transport = os.environ.get("RMA_TRANSPORT", "auto") or "auto"
    if transport == "libfabric":
        print(f"between the ranks of one host (RMA_TRANSPORT={transport}): libfabric for windows and messages")
    else:
        print(f"between the ranks of one host (RMA_TRANSPORT={transport}): shared memory (Window.allocate "
              "memory in shared segments, Window.create through process_vm_writev/readv, synchronization "
              "and messages through shared memory); between hosts: libfabric")
    return 0


# --------------------------------------------------------------------------
# signals


class _SignalForwarder:
    """Turn SIGINT/SIGTERM/SIGHUP into events on a queue while a job runs.

    The handler only puts onto a SimpleQueue, which is safe to call from a
    signal handler, so the main loop handles signals like any other event.
    """

    SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

    def __init__(self, events: queue.SimpleQueue):
        self._events = events
        self._saved: dict[int, object] = {}

    def __enter__(self) -> "_SignalForwarder":
        # signal.signal only works in the main thread; elsewhere (main()
        # called from a thread) rmarun simply does not catch signals.
        if threading.current_thread() is threading.main_thread():
            for sig in self.SIGNALS:
                self._saved[sig] = signal.signal(sig, self._handle)
        return self

    def _handle(self, signum, frame) -> None:
        self._events.put(("signal", signum, None))

    def __exit__(self, *exc_info) -> None:
        for sig, handler in self._saved.items():
            signal.signal(sig, handler)


# --------------------------------------------------------------------------
# running a job


class _Rank:
    """Hold one started rank: its process, output relays and stderr tail."""

    def __init__(self, rank: int, proc: subprocess.Popen):
        self.rank = rank
        self.proc = proc
        self.pid = proc.pid
        self.returncode: int | None = None
        self.tail: collections.deque[bytes] = collections.deque(maxlen=TAIL_LINES)
        self.threads: list[threading.Thread] = []


class _Job:
    """Run N ranks of one command until they all exit, and clean up after them."""

    def __init__(self, args: argparse.Namespace, command: list[str]):
        self.args = args
        self.command = command
        self.size: int = args.n
        self.events: queue.SimpleQueue = queue.SimpleQueue()
        self.ranks: list[_Rank] = []
        out_lock = threading.Lock()
        # Both streams share one lock so that lines of different ranks, and
        # rmarun's own messages, never interleave mid-line.
        self.stdout = _Output(sys.stdout, out_lock)
        self.stderr = _Output(sys.stderr, out_lock)
        self.died_per_store: set[int] = set()
        # Whether other ranks were still running when the first one failed.
        self.stopped_others = False

    def _on_rank_exit(self, rank: int, clean: bool) -> None:
        # Informative only: the process exit status is what decides.
        if not clean:
            self.died_per_store.add(rank)

    def _environment(self, rank: int, store_address: str, secret: str) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            RMA_RANK=str(rank),
            RMA_SIZE=str(self.size),
            RMA_STORE=store_address,
            RMA_SECRET=secret,
            RMA_LAUNCHER=PROG,
        )
        # Ranks write to pipes; without this their Python output would sit
        # in block buffers and reach the terminal late and out of order.
        env.setdefault("PYTHONUNBUFFERED", "1")
        if self.args.provider:
            env["RMA_PROVIDER"] = self.args.provider
        return env

    def _relay(self, rank: _Rank, stream, out: _Output, keep_tail: bool) -> None:
        """Copy one output pipe of a rank to rmarun's stream, line by line."""
        tag = self.args.tag_output
        prefix = f"[{rank.rank}] ".encode()
        at_line_start = True
        try:
            while True:
                chunk = stream.readline(_MAX_CHUNK)
                if not chunk:
                    break
                if keep_tail:
                    rank.tail.append(chunk)
                if tag and at_line_start:
                    chunk = prefix + chunk
                at_line_start = chunk.endswith(b"\n")
                out.write(chunk)
            if tag and not at_line_start:
                # Terminate a tagged partial last line, or the next rank's
                # tag would land in the middle of it.
                out.write(b"\n")
        except (OSError, ValueError):
            pass
        finally:
            stream.close()

    def _wait(self, rank: _Rank) -> None:
        rank.proc.wait()
        self.events.put(("exit", rank.rank, rank.proc.returncode))

    def _start_rank(self, index: int, env: dict[str, str]) -> _Rank:
        proc = subprocess.Popen(
            self.command,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            # Each rank leads its own process group, so that os.killpg
            # reaches every process it spawned, and a Ctrl-C on the
            # terminal reaches only rmarun, which forwards it.
            start_new_session=True,
        )
        rank = _Rank(index, proc)
        for target, args in (
            (self._relay, (rank, proc.stdout, self.stdout, False)),
            (self._relay, (rank, proc.stderr, self.stderr, True)),
            (self._wait, (rank,)),
        ):
            thread = threading.Thread(target=target, args=args, name=f"rmarun-rank{index}", daemon=True)
            thread.start()
            rank.threads.append(thread)
        return rank

    def _signal_all(self, sig: int) -> None:
        for rank in self.ranks:
            _killpg(rank.pid, sig)

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
            with _SignalForwarder(self.events):
                try:
                    return self._run(server)
                finally:
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
            cleanup_shm_files(rank.pid for rank in self.ranks)

    def _run(self, server: StoreServer) -> int:
        store_address = _store_address(server, self.args.store_host)
        for index in range(self.size):
            try:
                rank = self._start_rank(index, self._environment(index, store_address, server.secret))
            except OSError as exc:
                _say(f"cannot start rank {index} ({shlex.join(self.command)}): {exc.strerror or exc}")
                self._stop(signal.SIGTERM)
                self._wait_for_exits(set(r.rank for r in self.ranks))
                return 127 if isinstance(exc, FileNotFoundError) else 126
            self.ranks.append(rank)

        running = set(range(self.size))
        cause: _Rank | None = None
        exit_code: int | None = None
        stopping = False
        kill_at: float | None = None
        deadline = time.monotonic() + self.args.timeout if self.args.timeout else None

        while running:
            now = time.monotonic()
            wake = [t for t in (kill_at, None if stopping else deadline) if t is not None]
            try:
                kind, who, value = self.events.get(timeout=max(0.0, min(wake) - now) if wake else None)
            except queue.Empty:
                now = time.monotonic()
                if kill_at is not None and now >= kill_at:
                    self._signal_all(signal.SIGKILL)
                    kill_at = None
                elif deadline is not None and not stopping and now >= deadline:
                    _say(
                        f"timeout after {self.args.timeout:g} s; ranks still running: "
                        + ", ".join(map(str, sorted(running)))
                    )
                    exit_code = 124
                    stopping, kill_at = True, self._stop(signal.SIGTERM)
                continue

            if kind == "exit":
                rank = self.ranks[who]
                rank.returncode = value
                running.discard(who)
                if value != 0 and not stopping:
                    # The first rank to fail on its own is the cause; the
                    # exits of ranks rmarun stops afterwards are not failures.
                    cause, exit_code = rank, _status(value)
                    self.stopped_others = bool(running)
                    stopping, kill_at = True, self._stop(signal.SIGTERM)
            elif kind == "signal":
                if not stopping:
                    name = signal.Signals(who).name
                    _say(f"got {name}; stopping all ranks")
                    exit_code = 128 + who
                    # Forward the same signal, so that e.g. a rank gets its
                    # KeyboardInterrupt as under a plain python command.
                    stopping, kill_at = True, self._stop(who)
                else:
                    # A second Ctrl-C: the user wants out now.
                    self._signal_all(signal.SIGKILL)
                    kill_at = None

        self._reap_groups(kill_at if stopping else None)
        self._finish_relays()
        if cause is not None:
            self._report(cause)
        return exit_code or 0

    def _stop(self, sig: int) -> float:
        """Signal every rank's group; return when to send SIGKILL."""
        self._signal_all(sig)
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
            if not _live_groups(rank.pid for rank in self.ranks):
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
        """Print the failure summary: which rank failed and the end of its stderr."""
        lines = [
            f"{PROG}: rank {cause.rank} failed ({_describe_exit(cause.returncode)})"
            + ("; stopping the other ranks" if self.stopped_others else ""),
            f"{PROG}: ---- rank {cause.rank} stderr (last lines) ----",
        ]
        text = "\n".join(lines) + "\n"
        tail = b"".join(cause.tail)
        if tail and not tail.endswith(b"\n"):
            tail += b"\n"
        if not tail:
            tail = b"(no output on stderr)\n"
        end = f"{PROG}: ---- end of rank {cause.rank} stderr ----\n"
        self.stderr.write(text.encode() + tail + end.encode())


# --------------------------------------------------------------------------
# --serve-store


def serve_store(args: argparse.Namespace) -> int:
    """Run only a store and print the environment ranks started elsewhere need.

    Serves until every rank has connected and left (or SIGINT/SIGTERM);
    returns 0 if all ranks said bye, 1 if any died, 128+N on signal N.
    """
    events: queue.SimpleQueue = queue.SimpleQueue()

    def on_exit(rank: int, clean: bool) -> None:
        events.put(("exit", rank, clean))

    server = StoreServer(
        args.n, host=args.store_host, port=args.store_port, on_rank_exit=on_exit
    )
    try:
        server.start()
        address = _store_address(server, args.store_host)
        print(f"export RMA_STORE={shlex.quote(address)}")
        print(f"export RMA_SECRET={shlex.quote(server.secret)}")
        print(f"export RMA_SIZE={args.n}")
        print(
            f"# each rank also needs RMA_RANK (0..{args.n - 1}); SLURM_PROCID, PMI_RANK, "
            "OMPI_COMM_WORLD_RANK are used when RMA_RANK is unset",
            flush=True,
        )
        left: set[int] = set()
        died = False
        with _SignalForwarder(events):
            while len(left) < args.n:
                kind, who, value = events.get()
                if kind == "signal":
                    _say(f"got {signal.Signals(who).name}; closing the store")
                    return 128 + who
                left.add(who)
                died = died or not value
        return 1 if died else 0
    finally:
        server.close()


# --------------------------------------------------------------------------
# entry point


def main(argv: Sequence[str] | None = None) -> int:
    """Run rmarun with argv (sys.argv[1:] when None) and return its exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    own, program, kind = split_argv(argv)
    try:
        args = parser.parse_args(own)
    except SystemExit as exc:  # --help, or a usage error already printed
        return int(exc.code or 0)
    if args.module is not None or args.code is not None:
        # Only reachable as "-m" / "-c" glued into another option's value.
        parser.print_usage(sys.stderr)
        _say("-m and -c must come after rmarun's own options")
        return 2

    if args.info:
        return print_info()
    if args.n is None:
        parser.print_usage(sys.stderr)
        _say("the number of ranks is required: -n N")
        return 2
    if args.n < 1:
        _say(f"the number of ranks must be at least 1, not {args.n}")
        return 2
    if args.timeout is not None and args.timeout <= 0:
        _say(f"--timeout must be positive, not {args.timeout:g}")
        return 2

    try:
        if args.serve_store:
            if program is not None:
                _say("--serve-store runs no program; start the ranks by other means")
                return 2
            return serve_store(args)

        if program is None:
            parser.print_usage(sys.stderr)
            _say("nothing to run: give a script, -m module, -c code or a program")
            return 2
        try:
            command = build_command(kind, program)
        except FileNotFoundError as exc:
            what = "no such file" if str(exc).endswith(".py") else "command not found"
            _say(f"{what}: {exc}")
            return 127
        return _Job(args, command).run()
    except BootstrapError as exc:
        _say(str(exc))
        return 1


if __name__ == "__main__":
    sys.exit(main())
