"""Ranks that Slurm starts: `srun --mpi=pmix` on a one-node Slurm that the tests start
(tests/slurm.py) runs rma programs with no rmarun and no store, as on a cluster.

`./dev.sh test` installs Debian's slurmctld, slurmd and slurm-client; without them these skip.
"""

import sys
import textwrap
import time
import uuid

import pytest

from processes import RING_JOB, gone_soon, ring_rows, run_in_own_group
from slurm import Slurm

WAIT = 90.0


@pytest.fixture(scope="module")
def slurm():
    why = Slurm.refusal()
    if why:
        pytest.skip(why)
    # Installed and root: a Slurm that does not come up is a failure, not a reason to skip.
    with Slurm() as started:
        yield started


def srun(slurm, size: int, code: str, tmp_path):
    """`srun --mpi=pmix -n size python script` with code as the script; the CompletedProcess."""
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent(code))
    env = {key: value for key, value in slurm.env.items() if not key.startswith(("RMA_", "PMIX_", "OMPI_"))}
    # --overcommit: more tasks than the node's cores, as the other tests oversubscribe.
    command = ["srun", "--mpi=pmix", "--overcommit", "-n", str(size), sys.executable, str(script)]
    return run_in_own_group(command, timeout=WAIT, env=env, cwd=tmp_path)


@pytest.mark.parametrize("size", [1, 2, 3, 4])
def test_srun_starts_an_rma_job(slurm, size, tmp_path):
    result = srun(slurm, size, RING_JOB, tmp_path)
    assert result.returncode == 0, result.stderr
    assert sorted(line.split() for line in result.stdout.splitlines()) == ring_rows(size)


def test_a_dying_rank_ends_the_others_blocked_calls(slurm, tmp_path):
    # srun lets the other tasks run on when one fails: without rma's own watch they would wait
    # in the fence until RMA_TIMEOUT.
    marker = f"marker-{uuid.uuid4().hex}"
    code = """
    import os, time, numpy as np, rma
    comm = rma.init()
    win = rma.Window.allocate(comm, 1, np.int64)
    if comm.rank == 2:
        time.sleep(0.5)
        raise RuntimeError("rank 2 gives up")
    win.fence()
    """
    (tmp_path / marker).mkdir()
    started = time.monotonic()
    result = srun(slurm, 4, code, tmp_path / marker)
    assert time.monotonic() - started < 30, result.stderr
    assert result.returncode != 0
    assert "RuntimeError: rank 2 gives up" in result.stderr
    # Each of the others ends its fence with PeerError naming rank 2.
    errors = [line for line in result.stderr.splitlines() if "PeerError" in line]
    assert len(errors) == 3 and all("rank 2" in line for line in errors), result.stderr
    assert gone_soon(marker) == []
