"""Commands that tests run in a process group of their own, with a deadline, and what a job
left behind: shared by the tests that start jobs through a launcher (rmarun across hosts,
mpirun)."""

import os
import signal
import subprocess
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
