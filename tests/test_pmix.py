"""Ranks that a PMIx launcher starts: Debian's Open MPI `mpirun` runs rma programs with no
rmarun and no store (rma.init() takes rank, size and the peers' addresses from PMIx).

`./dev.sh test` installs openmpi-bin (which brings libpmix2); without mpirun these tests skip.
"""

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
import uuid

import pytest

from rma._job import pmix_client
from rma.errors import BootstrapError

MPIRUN = shutil.which("mpirun")
pytestmark = pytest.mark.skipif(
    MPIRUN is None, reason="no mpirun here (Debian's openmpi-bin; ./dev.sh test installs it)"
)
WAIT = 90.0


def mpirun(size: int, code: str, tmp_path, timeout: float = WAIT) -> subprocess.CompletedProcess:
    """`mpirun -n size python script` with code as the script; the CompletedProcess."""
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent(code))
    # Nothing of rmarun's: the ranks must find their job through PMIx alone.
    env = {key: value for key, value in os.environ.items() if not key.startswith(("RMA_", "PMIX_", "OMPI_"))}
    command = [MPIRUN, "--oversubscribe", "-n", str(size)]
    if os.geteuid() == 0:
        command.append("--allow-run-as-root")
    with subprocess.Popen(
        [*command, sys.executable, str(script)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        env=env,
        cwd=tmp_path,
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


def left_with(marker: str) -> list[int]:
    """Pids of live processes whose command line carries marker."""
    left = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmdline = f.read()
            with open(f"/proc/{pid}/stat", "rb") as f:
                state = f.read().rsplit(b")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if marker.encode() in cmdline and state != b"Z":
            left.append(int(pid))
    return left


@pytest.mark.parametrize("size", [1, 2, 3, 4])
def test_mpirun_starts_an_rma_job(size, tmp_path):
    code = """
    import os, numpy as np, rma
    comm = rma.init()
    win = rma.Window.allocate(comm, 1, np.int64)
    win.fence()
    win.put(np.array([comm.rank + 100]), (comm.rank + 1) % comm.size)
    win.fence()
    total = comm.allreduce(comm.rank)
    # One write per line: mpirun relays what each read of a rank's pipe gets, so a line printed
    # in pieces (print under PYTHONUNBUFFERED) may be split by another rank's.
    os.write(1, f"{comm.rank} {comm.size} {total} {int(win.local[0])}\\n".encode())
    win.free()
    """
    result = mpirun(size, code, tmp_path)
    assert result.returncode == 0, result.stderr
    rows = sorted([int(field) for field in line.split()] for line in result.stdout.splitlines())
    assert rows == [[rank, size, size * (size - 1) // 2, (rank - 1) % size + 100] for rank in range(size)]


def test_a_dying_rank_ends_the_mpirun_job(tmp_path):
    marker = f"marker-{uuid.uuid4().hex}"
    code = """
    import sys, time, rma
    comm = rma.init()
    time.sleep(0.3)
    if comm.rank == 2:
        raise RuntimeError("rank 2 gives up")
    comm.barrier()  # the others wait for rank 2 until the job ends
    """
    (tmp_path / marker).mkdir()
    started = time.monotonic()
    result = mpirun(4, code, tmp_path / marker)
    assert result.returncode != 0
    assert time.monotonic() - started < 60
    assert "RuntimeError: rank 2 gives up" in result.stderr
    assert left_with(marker) == []


def test_without_libpmix_the_error_says_what_to_install(monkeypatch):
    # A process that a PMIx launcher started on a machine without the client library.
    def missing(name, *args, **kwargs):
        raise OSError(f"{name}: cannot open shared object file")

    monkeypatch.setattr(pmix_client.ctypes, "CDLL", missing)
    with pytest.raises(BootstrapError, match="apt-get install libpmix2"):
        pmix_client.PmixClient()
