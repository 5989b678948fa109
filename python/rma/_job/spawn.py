"""Start rank processes, each leading its own process group, and stop them, group and all.

A rank that leads its own process group (a new session) can be stopped with everything it
spawned by one os.killpg, and a Ctrl-C on the terminal reaches only the process that started
the ranks (rmarun, pytest, a notebook's kernel), which decides what the ranks get.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterable, Sequence

__all__ = [
    "rank_environment", "start_rank", "killpg", "kill_groups", "live_groups", "exit_status", "describe_exit",
    "traceback_label", "pid_alive", "child_pids",
]  # fmt: skip


def traceback_label(rank: int) -> str:
    """The line a rank of rmarun prints above its uncaught exception's traceback.

    rmarun looks for it in a failed rank's output: found, the traceback was shown under its
    rank's label already and is not repeated in the failure report.
    """
    return f"rma: rank {rank} ended with an uncaught exception:"


# The variables by which a user sizes a process's thread pools (OpenMP, and the BLAS libraries
# behind NumPy: OpenBLAS reads OMP_NUM_THREADS too). One of them set: the user chose.
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS")


def threads_per_rank(ranks_on_host: int) -> int:
    """This host's cores (those this process may run on) shared among the ranks it runs."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - every Linux has it
        cores = os.cpu_count() or 1
    return max(1, cores // max(1, ranks_on_host))


def rank_environment(
    rank: int,
    size: int,
    store_address: str,
    secret: str,
    provider: str | None = None,
    ranks_on_host: int | None = None,
) -> dict[str, str]:
    """Return this process's environment plus what makes a process rank `rank` of a job.

    Ranks share their host's cores, so unless the user sized the thread pools (THREAD_VARIABLES),
    each rank's OpenMP and BLAS threads get its share: OMP_NUM_THREADS = cores // ranks_on_host
    (default `size`), at least 1. Else NumPy's OpenBLAS starts a thread per core in every rank,
    which spin at import: 0.1 s of CPU per rank measured on 2 cores, and 8 threads fighting for
    2 cores in a 4-rank job's first matrix product."""
    env = dict(os.environ)
    if not any(name in env for name in THREAD_VARIABLES):
        env["OMP_NUM_THREADS"] = str(threads_per_rank(size if ranks_on_host is None else ranks_on_host))
    env.update(
        RMA_RANK=str(rank),
        RMA_SIZE=str(size),
        RMA_STORE=store_address,
        RMA_SECRET=secret,
        # Ranks write to pipes or files; without this their Python output would sit in block
        # buffers and arrive late, out of order, or not at all when the rank is killed.
        PYTHONUNBUFFERED="1",
    )
    if provider:
        env["RMA_PROVIDER"] = provider  # else the environment's, or the automatic choice
    return env


def start_rank(
    command: Sequence[str], env: dict[str, str], stdin: int | None = subprocess.DEVNULL, **popen
) -> subprocess.Popen:
    """Start one rank process as the leader of a new process group, reading `stdin` (as
    subprocess.Popen takes it: /dev/null unless told, None for this process's own).

    `popen` holds further arguments of subprocess.Popen (stdout, stderr, pass_fds).
    """
    return subprocess.Popen(command, env=env, stdin=stdin, start_new_session=True, **popen)


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists (a zombie counts as alive)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process: alive, and not ours to judge
    return True


def child_pids(pid: int) -> list[int]:
    """The children of process pid (Linux /proc), oldest first; [] when it is gone."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(child) for child in f.read().split()]
    except OSError:
        return []


def killpg(pgid: int, sig: int) -> bool:
    """Send sig to a process group; return False when the group is gone."""
    try:
        os.killpg(pgid, sig)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        # The pgid was recycled by someone else's process: not ours to touch.
        return False


def kill_groups(procs: Iterable[subprocess.Popen], timeout: float) -> None:
    """Kill ranks and whatever they started, and reap them, waiting at most `timeout` s for each."""
    procs = list(procs)
    for proc in procs:
        # Only while the rank is unreaped: until then its pid, and so its process group id,
        # cannot have been reused by another process.
        if proc.returncode is None:
            killpg(proc.pid, signal.SIGKILL)
    for proc in procs:
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            pass  # unkillable (stuck in the kernel): nothing more can be done


def live_groups(pgids: Iterable[int]) -> set[int]:
    """Return those of the process groups pgids that still have a live member.

    killpg(pgid, 0) alone also succeeds for a group whose members are all
    zombies waiting for init to reap them, which may take a while in a
    container; on Linux /proc tells the zombies apart.
    """
    candidates = {pgid for pgid in pgids if killpg(pgid, 0)}
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


def exit_status(returncode: int) -> int:
    """Map a Popen returncode to a shell-style exit status (128+N for signal N)."""
    return 128 - returncode if returncode < 0 else returncode


def describe_exit(returncode: int | None) -> str:
    """Say how a process ended ("exit status N", "killed by SIGNAME"), or that it runs still."""
    if returncode is None:
        return "still running"
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"killed by {name}"
    return f"exit status {returncode}"
