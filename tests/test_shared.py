"""Windows in shared memory: every rank of a host maps every rank's segment.

(Every other window test runs on them too, since allocate() uses shared memory on one host;
CI runs those suites again with RMA_TRANSPORT=libfabric.)
"""

import os

import numpy as np
import pytest

import rma

EVERYWHERE = dict(nprocs=[1, 2, 3, 4], providers=["shm", "tcp"])


@pytest.mark.rma(**EVERYWHERE)
def test_allocate_on_one_host_uses_shared_memory(comm):
    win = rma.Window.allocate(comm, 4, np.int64)
    expected = "libfabric" if os.environ.get("RMA_TRANSPORT") == "libfabric" else "shared-memory"
    assert win.transport == expected
    mine = rma.Window.create(comm, np.zeros(2))
    assert mine.transport == "libfabric"  # the caller's own memory is reached through libfabric
    mine.free()
    win.free()


@pytest.mark.rma(**EVERYWHERE)
def test_allocate_shared_views_every_rank_including_empty_ones(comm):
    win = rma.Window.allocate_shared(comm, comm.rank, np.float64)  # rank 0 has 0 elements
    assert win.transport == "shared-memory"
    win.local[:] = comm.rank
    comm.barrier()
    for rank in range(comm.size):
        view = win.shared(rank)
        assert view.shape == (rank,) and np.all(view == rank)
    comm.barrier()  # everyone has looked before anyone stores
    # A store through a peer's view is a store into its memory.
    if comm.size > 1:
        last = comm.size - 1
        if comm.rank == 0:
            win.shared(last)[0] = -5.0
        comm.barrier()
        if comm.rank == last:
            assert win.local[0] == -5.0
    comm.barrier()
    win.free()


@pytest.mark.rma(nprocs=[1, 3], providers=["shm"])
def test_segment_names_do_not_outlive_creation(comm):
    win = rma.Window.allocate_shared(comm, 16, np.uint8)
    comm.barrier()
    assert not [name for name in os.listdir("/dev/shm") if name.startswith("rma-")]
    other = rma.Window.create(comm, np.zeros(4))
    with pytest.raises(rma.RMAError, match="allocate_shared"):
        other.shared(0)
    other.free()
    win.free()


@pytest.mark.rma(nprocs=[2, 4], providers=["shm"])
def test_accumulates_without_a_lock_free_atomic_stay_exact(comm):
    # complex128 has no lock-free CPU atomic here, and a raw uint8 window may hold misaligned
    # elements: such calls go to the target as messages, so concurrent updates still add up.
    win = rma.Window.allocate(comm, 2, np.complex128)
    raw = rma.Window.allocate(comm, 17, np.uint8)
    with win.lock_all(), raw.lock_all():
        for _ in range(100):
            win.accumulate(np.complex128(1 + 1j), 0, 1)
            raw.accumulate(np.int64(1), 0, 1)  # bytes 1..8: misaligned
    comm.barrier()
    if comm.rank == 0:
        assert win.local[1] == 100 * comm.size * (1 + 1j)
        assert raw.local[1:9].view(np.int64)[0] == 100 * comm.size
    comm.barrier()
    win.free()
    raw.free()
