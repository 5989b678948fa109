"""safe: sync: put, unlock, barrier, accumulate, unlock, barrier, get

Origin a puts 10 into element 0 of rank 0 under a shared lock; unlock completes it.
After a barrier, origin b accumulates 5 into element 0 (SUM) under a shared lock.
After another barrier, rank 0 gets element 0. Each conflicting pair (put-acc, acc-get)
is separated by a completion followed by a barrier, so nothing is concurrent.
"""

import numpy as np

import rma

comm = rma.init()
a, b = comm.size - 1, comm.size - 2  # two different origins; at 2 ranks b is the target itself
win = rma.Window.allocate(comm, 8, np.int64)
result = np.zeros(1, np.int64)
if comm.rank == a:
    with win.lock(0, rma.LOCK_SHARED):
        win.put(np.int64(10), 0, 0)
comm.barrier()
if comm.rank == b:
    with win.lock(0, rma.LOCK_SHARED):
        win.accumulate(np.int64(5), 0, 0, op=rma.SUM)
comm.barrier()
if comm.rank == 0:
    with win.lock(0, rma.LOCK_SHARED):
        win.get(result, 0, 0)
    assert result[0] == 15, result
win.free()
