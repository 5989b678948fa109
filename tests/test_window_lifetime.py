"""A window is collective to free: one rank dropping its window without free() must not let
the others' puts land in memory that rank reuses (issue "Reliability": 5 of 5 runs wrote into an
unrelated array). A dropped window keeps its memory, and its registration, until the job ends,
and says so with a ResourceWarning."""

import gc
import warnings

import numpy as np
import pytest

import rma

ROUNDS = 200
SIZE = 4096  # int64 elements: 32 KiB, the size of the arrays the dropping rank makes afterwards


@pytest.mark.rma(nprocs=[2, 3, 4], timeout=60)
def test_puts_into_a_dropped_create_window_land_in_its_own_memory(comm):
    owner = 0
    mine = np.zeros(SIZE, np.int64)
    win = rma.Window.create(comm, mine)
    comm.barrier()
    if comm.rank == owner:
        del mine
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            del win
            gc.collect()
        comm.barrier()  # the window is gone here; the others start putting
        fresh = [np.zeros(SIZE, np.int64) for _ in range(64)]  # the allocator may hand the memory back
        comm.barrier()  # the others are done
        assert all(not array.any() for array in fresh), "a peer's put landed in an unrelated array"
        assert [w for w in caught if issubclass(w.category, ResourceWarning) and "without free" in str(w.message)]
    else:
        comm.barrier()
        pattern = np.full(SIZE, 7 + comm.rank, np.int64)
        for _ in range(ROUNDS):
            with win.lock(owner, rma.LOCK_SHARED):
                win.put(pattern, owner)
        comm.barrier()
        with pytest.warns(ResourceWarning):
            del win  # (these ranks drop theirs too; the job ends without a collective free)


@pytest.mark.rma(nprocs=[1, 2], timeout=60)
def test_a_freed_window_warns_nothing(comm):
    win = rma.Window.allocate(comm, 8, np.int64)
    win.free()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        del win
        gc.collect()
    assert not [w for w in caught if issubclass(w.category, ResourceWarning)]
