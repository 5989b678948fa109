"""Issue 39, item 2: a lock on a rank reached through libfabric (another host, or any other rank
with RMA_TRANSPORT=libfabric) is not asked for at win.lock: its request leaves with the epoch's
first call to that rank, and the target holds the calls that came with it until it grants the
lock. MPI's lock protects the epoch's calls, so they must still never reach the target's memory
while another rank holds a conflicting lock; an epoch that makes no call to its target asks for
nothing and waits for nothing (as MPICH). rma.sync.Mutex, whose lock guards no call, still waits
for its grant (tests/test_passive.py's mutex tests).

Each job runs its ranks through libfabric on this host, where every other rank is reached as
one on another host is; rank 0 holds its own window's exclusive lock meanwhile (a rank's lock
on its own window is taken at win.lock: it guards its loads and stores too).
"""

import os
import time

import numpy as np
import pytest

import rma

THROUGH_FABRIC = dict(nprocs=[1, 2, 3, 4], transports="libfabric", providers="tcp", timeout=90)
HOLD = 1.0  # seconds rank 0 holds its exclusive lock while the others make their epochs
SMALL, LARGE = 1, 4096  # int64 elements: a message (8 B), a native write or read (32 KiB)


def hold_then_release(comm, win, seen):
    """Rank 0: take its own exclusive lock, tell the others, hold it HOLD s, copy what its
    memory holds then into `seen`, release."""
    win.lock(0, rma.LOCK_EXCLUSIVE)
    for rank in range(1, comm.size):
        comm.send("held", rank)
    time.sleep(HOLD)
    seen[:] = win.local
    win.unlock(0)


@pytest.mark.rma(**THROUGH_FABRIC)
def test_calls_under_a_lock_reach_the_target_only_once_it_is_granted(comm):
    # Every other rank writes its slot of rank 0's window under an exclusive lock while rank 0
    # holds it: a small put (it rides the request and waits at the target), a large one (a
    # native write: it waits for the grant at the origin), an accumulate and a fetch_and_op.
    slot = SMALL + LARGE + 2
    win = rma.Window.allocate(comm, slot * comm.size, np.int64)
    seen = np.zeros(slot * comm.size, np.int64)
    comm.barrier()
    if comm.rank == 0:
        hold_then_release(comm, win, seen)
    else:
        assert comm.recv(0) == "held"
        base, mark = slot * comm.rank, comm.rank + 1
        fetched = np.zeros(1, np.int64)
        with win.lock(0, rma.LOCK_EXCLUSIVE):
            win.put(np.full(SMALL, mark, np.int64), 0, target=slice(base, base + SMALL))
            win.put(np.full(LARGE, mark, np.int64), 0, target=slice(base + SMALL, base + SMALL + LARGE))
            win.accumulate(np.array([mark], np.int64), 0, base + SMALL + LARGE, rma.SUM)
            win.fetch_and_op(np.array([mark], np.int64), fetched, 0, base + SMALL + LARGE + 1, rma.SUM)
        assert fetched[0] == 0
    comm.barrier()
    if comm.rank == 0:
        # Nothing landed while rank 0 held its lock; everything landed once it was released.
        assert not seen.any(), np.nonzero(seen)
        expected = np.zeros(slot * comm.size, np.int64)
        for rank in range(1, comm.size):
            expected[slot * rank : slot * (rank + 1)] = rank + 1
        assert (win.local == expected).all()
    comm.barrier()
    win.free()


@pytest.mark.rma(**THROUGH_FABRIC)
def test_a_call_in_pieces_under_a_lock_lands_only_once_it_is_granted(comm):
    # A strided accumulate of 1.6 MB travels as some 26 pieces, each a call of its own: the
    # first carries the request, the next ones ride it up to the limit the target holds, and
    # the rest wait for the grant at the origin (a target sent more calls than it holds before
    # the grant stops trusting the origin). None lands while rank 0 holds its lock.
    count = 200_000  # int64 of each rank, every other element of its slot
    win = rma.Window.allocate(comm, 2 * count * comm.size, np.int64)
    seen = np.zeros(2 * count * comm.size, np.int64)
    comm.barrier()
    if comm.rank == 0:
        hold_then_release(comm, win, seen)
    else:
        assert comm.recv(0) == "held"
        mine = np.arange(count, dtype=np.int64) + comm.rank
        with win.lock(0, rma.LOCK_EXCLUSIVE):
            win.accumulate(mine, 0, target=np.s_[2 * count * comm.rank : 2 * count * (comm.rank + 1) : 2], op=rma.SUM)
    comm.barrier()
    if comm.rank == 0:
        assert not seen.any(), np.nonzero(seen)
        expected = np.zeros(2 * count * comm.size, np.int64)
        for rank in range(1, comm.size):
            expected[2 * count * rank : 2 * count * (rank + 1) : 2] = np.arange(count) + rank
        np.testing.assert_array_equal(win.local, expected)
    comm.barrier()
    win.free()


@pytest.mark.rma(**THROUGH_FABRIC)
def test_a_read_under_a_shared_lock_waits_for_the_writer_holding_it(comm):
    # A get rides a shared lock request, which waits behind rank 0's exclusive lock: it reads
    # what rank 0 wrote before its release, not what was there when the get was made.
    win = rma.Window.allocate(comm, SMALL + LARGE, np.int64)
    comm.barrier()
    if comm.rank == 0:
        win.lock(0, rma.LOCK_EXCLUSIVE)
        for rank in range(1, comm.size):
            comm.send("held", rank)
        time.sleep(HOLD)
        win.local[:] = 7
        win.unlock(0)
    else:
        assert comm.recv(0) == "held"
        small, large = np.zeros(SMALL, np.int64), np.zeros(LARGE, np.int64)
        with win.lock(0, rma.LOCK_SHARED):
            win.get(small, 0, target=slice(0, SMALL))
            win.get(large, 0, target=slice(SMALL, SMALL + LARGE))
        assert (small == 7).all() and (large == 7).all()
    comm.barrier()
    win.free()


@pytest.mark.rma(**THROUGH_FABRIC)
def test_an_epoch_without_calls_to_its_target_waits_for_no_lock(comm):
    if os.environ.get("RMA_CHECK", "0").lower() not in ("", "0", "off", "no", "false"):
        pytest.skip("RMA_CHECK takes every lock at win.lock: its step reads the last holder's clock")
    # While rank 0 holds its exclusive lock, the others' epochs on rank 0 that make no call to
    # it end at once: no request was sent, so none waits (a lock, a flush, a lock_all).
    win = rma.Window.allocate(comm, 1, np.int64)
    seen = np.zeros(1, np.int64)
    comm.barrier()
    if comm.rank == 0:
        hold_then_release(comm, win, seen)
    else:
        assert comm.recv(0) == "held"
        began = time.monotonic()
        with win.lock(0, rma.LOCK_EXCLUSIVE):
            win.flush(0)
        with win.lock(0, rma.LOCK_SHARED):
            pass
        with win.lock_all():
            win.flush_all()
        took = time.monotonic() - began
        assert took < HOLD / 2, f"{took:.3f} s"
        # The next epoch with a call waits for rank 0's release, and its put lands.
        with win.lock(0, rma.LOCK_EXCLUSIVE):
            win.accumulate(np.array([1], np.int64), 0, 0, rma.SUM)
        assert time.monotonic() - began > HOLD / 2
    comm.barrier()
    if comm.rank == 0:
        assert win.local[0] == comm.size - 1
    comm.barrier()
    win.free()
