"""Ranks that a PMIx launcher starts: Debian's Open MPI `mpirun` runs rma programs with no
rmarun and no store (rma.init() takes rank, size and the peers' addresses from PMIx).

`./dev.sh test` installs openmpi-bin (which brings libpmix2); without mpirun these tests skip.
"""

import os
import shutil
import subprocess
import sys
import textwrap
import time
import uuid

import pytest

from processes import RING_JOB, processes_with, ring_rows, run_in_own_group
from rma._job import pmix_client
from rma.errors import BootstrapError

MPIRUN = shutil.which("mpirun")
pytestmark = pytest.mark.skipif(
    MPIRUN is None, reason="no mpirun here (Debian's openmpi-bin; ./dev.sh test installs it)"
)
WAIT = 90.0


def mpirun(size: int, code: str, tmp_path, timeout: float = WAIT, options=()) -> subprocess.CompletedProcess:
    """`mpirun -n size python script` with code as the script; the CompletedProcess."""
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent(code))
    # Nothing of rmarun's: the ranks must find their job through PMIx alone.
    env = {key: value for key, value in os.environ.items() if not key.startswith(("RMA_", "PMIX_", "OMPI_"))}
    command = [MPIRUN, "--oversubscribe", *options, "-n", str(size)]
    if os.geteuid() == 0:
        command.append("--allow-run-as-root")
    return run_in_own_group([*command, sys.executable, str(script)], timeout=timeout, env=env, cwd=tmp_path)


@pytest.mark.parametrize("size", [1, 2, 3, 4])
def test_mpirun_starts_an_rma_job(size, tmp_path):
    result = mpirun(size, RING_JOB, tmp_path)
    assert result.returncode == 0, result.stderr
    assert sorted(line.split() for line in result.stdout.splitlines()) == ring_rows(size)


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
    assert processes_with(marker) == []


# mpirun does not kill the job when a rank fails: the others must find out on their own.
LET_OTHERS_RUN = ("--mca", "orte_abort_on_non_zero_status", "0")


@pytest.mark.parametrize("size, dying", [(2, 1), (3, 0), (4, 2)])
def test_a_dying_rank_ends_the_others_blocked_calls_with_peer_error(size, dying, tmp_path):
    code = f"""
    import os, time, numpy as np, rma
    comm = rma.init()
    win = rma.Window.allocate(comm, 1, np.int64)
    if comm.rank == {dying}:
        time.sleep(0.5)
        os._exit(3)  # dies without a word, as a killed process
    try:
        win.fence()  # waits for rank {dying} until it is known dead
    except rma.PeerError as exc:
        os.write(1, f"{{comm.rank}} PeerError {{exc}}\\n".encode())
        # A rank that leaves without finalize makes mpirun end the others: each survivor waits
        # (20 s at most) until every survivor has said its line (a file each, in the job's cwd).
        open(f"said-{{comm.rank}}", "w").close()
        for _ in range(2000):
            if sum(name.startswith("said-") for name in os.listdir(".")) == comm.size - 1:
                break
            time.sleep(0.01)
        os._exit(0)
    """
    started = time.monotonic()
    result = mpirun(size, code, tmp_path, options=LET_OTHERS_RUN)
    assert time.monotonic() - started < 30, result.stderr
    lines = sorted(result.stdout.splitlines())
    assert [line.split()[:2] for line in lines] == [[str(r), "PeerError"] for r in range(size) if r != dying], (
        result.stdout + result.stderr
    )
    assert all(f"rank {dying}" in line for line in lines), lines


def test_a_launcher_whose_job_size_differs_from_its_pmix_job_is_refused(tmp_path):
    # As when each process is a PMIx job of its own (the launcher's PMIx is not this libpmix):
    # the launcher's count of ranks and PMIx's disagree.
    code = """
    import os, rma
    os.environ["OMPI_COMM_WORLD_SIZE"] = "3"
    try:
        rma.init()
    except rma.BootstrapError as exc:
        os.write(1, f"{exc}\\n".encode())  # one write per line (mpirun relays reads as they come)
    """
    result = mpirun(2, code, tmp_path)
    assert result.returncode == 0, result.stderr
    assert (
        result.stdout.splitlines()
        == [
            "rma.init: the launcher started 3 ranks (OMPI_COMM_WORLD_SIZE=3) but its PMIx job has 2; does the "
            "launcher's PMIx match this machine's libpmix (srun --mpi=pmix, Open MPI's own mpirun)?"
        ]
        * 2
    )


def test_a_watch_that_rank_0_cannot_start_fails_every_rank_at_once(tmp_path):
    # Rank 0 fails before the fence the others wait in: they must hear of it, not wait forever.
    # (A bad setting can no longer make it fail there: every rank judges its settings before it
    # joins. So rank 0's watch server is made to fail as a port it cannot listen on would.)
    code = """
    import os, rma
    from rma._job import pmix_client
    if os.environ["OMPI_COMM_WORLD_RANK"] == "0":
        def refuse(*args, **kwargs):
            raise OSError("no port to listen on")
        pmix_client.StoreServer = refuse  # rank 0's watch cannot start
    try:
        rma.init()
    except rma.BootstrapError as exc:
        os.write(1, f"{exc}\\n".encode())  # one write per line (mpirun relays reads as they come)
    """
    started = time.monotonic()
    result = mpirun(3, code, tmp_path)
    assert time.monotonic() - started < 30
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 3 and all("rank 0 could not start the watch of the ranks" in line for line in lines), lines
    assert all("no port to listen on" in line for line in lines), lines


def test_without_libpmix_the_error_says_what_to_install(monkeypatch):
    # A process that a PMIx launcher started on a machine without the client library.
    def missing(name, *args, **kwargs):
        raise OSError(f"{name}: cannot open shared object file")

    monkeypatch.setattr(pmix_client.ctypes, "CDLL", missing)
    with pytest.raises(BootstrapError, match="apt-get install libpmix2"):
        pmix_client.PmixClient()
