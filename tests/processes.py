"""Commands that tests run in a process group of their own, with a deadline, and what a job
left behind: shared by the tests that start jobs through a launcher (rmarun across hosts,
mpirun)."""

import os
import signal
import subprocess
import sys
import time


def run_in_own_group(argv, *, timeout, env=None, cwd=None) -> subprocess.CompletedProcess:
    """Run argv (its own session, stdin closed, text output) and return its CompletedProcess; past
    `timeout` its whole group is killed and TimeoutExpired raised, so a hung job cannot outlive
    its test."""
    with subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        env=env,
        cwd=cwd,
        text=True,
        start_new_session=True,
    ) as proc:
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def job_of(code: str, ranks: int, timeout: float = 120, **env: str) -> subprocess.CompletedProcess:
    """A job of `ranks` ranks on this host running `code` under rmarun, with `env` added; its
    CompletedProcess (a job of its own, for what the pooled ranks of @pytest.mark.rma cannot do:
    another RMA_TIMEOUT, MPI.Finalize, a fresh COMM_SELF)."""
    argv = [sys.executable, "-m", "rma", "-n", str(ranks), sys.executable, "-c", code]
    return run_in_own_group(argv, timeout=timeout, env=dict(os.environ, **env))


def processes_with(marker: str) -> list[str]:
    """The command lines of live processes (zombies excepted), on any host of the machine, that
    carry marker."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode(errors="replace")
            with open(f"/proc/{pid}/stat", "rb") as f:
                state = f.read().rsplit(b")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if marker in cmdline and state != b"Z":
            found.append(cmdline)
    return found


def gone_soon(marker: str, seconds: float = 10.0) -> list[str]:
    """What is still left with marker after waiting up to `seconds` for it to end."""
    end = time.monotonic() + seconds
    while (left := processes_with(marker)) and time.monotonic() < end:
        time.sleep(0.1)
    return left


# The job every launcher's test runs: a window ring and an allreduce. Each rank reports in one
# write (mpirun and srun relay what each read of a rank's pipe gets, so a line printed in pieces
# may be split by another rank's).
RING_JOB = """
import os, numpy as np, rma
comm = rma.init()
win = rma.Window.allocate(comm, 1, np.int64)
win.fence()
win.put(np.array([comm.rank + 100]), (comm.rank + 1) % comm.size)
win.fence()
total = comm.allreduce(comm.rank)
os.write(1, f"{comm.rank} {comm.size} {total} {int(win.local[0])} {win.transport}\\n".encode())
win.free()
"""


def ring_rows(size: int) -> list[list[str]]:
    """What RING_JOB's ranks report at `size` ranks on one host, sorted as sorted() sorts them."""
    rows = [
        [str(r), str(size), str(size * (size - 1) // 2), str((r - 1) % size + 100), "shared-memory"]
        for r in range(size)
    ]
    return sorted(rows)
