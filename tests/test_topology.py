"""The job's topology and transport setting, learned once at init: which ranks share a host,
for the world and for communicators split from it, and the RMA_TRANSPORT every rank agreed on.
(The plugin runs every rank on this host; tests/cpp/test_topology.cpp pretends several hosts.)"""

import os

import pytest

from rma._job import join as _runtime


def _core_runtime():
    return _runtime._job.runtime


@pytest.mark.rma(nprocs=[1, 2, 3, 4], timeout=60)
def test_every_rank_shares_this_host(comm):
    runtime = _core_runtime()
    everyone = list(range(comm.size))
    assert runtime.host_count == 1
    assert [runtime.host_of(r) for r in everyone] == [0] * comm.size
    assert all(runtime.same_host(comm.rank, r) for r in everyone)
    assert runtime.host_ranks == everyone
    assert comm._core.on_one_host()
    assert comm._core.host_ranks == everyone
    with pytest.raises(ValueError, match=f"rank {comm.size} is not in the job"):
        runtime.host_of(comm.size)


@pytest.mark.rma(nprocs=[1, 2, 3, 4], timeout=60)
def test_split_communicators_know_their_hosts(comm):
    half = comm.split(comm.rank % 2, key=-comm.rank)
    assert half._core.on_one_host()
    assert half._core.host_ranks == list(range(half.size))
    rest = comm.split(None if comm.rank == 0 else 1)
    if rest is not None:
        assert rest._core.on_one_host()
        assert rest._core.host_ranks == list(range(comm.size - 1))


@pytest.mark.rma(nprocs=[1, 2, 3, 4], timeout=60)
def test_the_transport_setting_is_the_environments(comm):
    expected = os.environ.get("RMA_TRANSPORT", "").strip() or "auto"
    assert _runtime.transport_setting() == expected
    assert _core_runtime().transport_setting == expected
    assert comm.allgather(_runtime.transport_setting()) == [expected] * comm.size
