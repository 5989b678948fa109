"""safe: sync: rput completed by unlock, then barrier, then another rank's rget

Origin a issues rput to element 3 of rank 0 inside an exclusive lock epoch; the unlock
completes it at the target. After a barrier, origin b reads element 3 with rget under a
shared lock. The unlock happens before the barrier, which happens before b's rget.
"""

import numpy as np

import rma

comm = rma.init()
a, b = comm.size - 1, comm.size - 2  # two different origins; at 2 ranks b is the target itself
win = rma.Window.allocate(comm, 8, np.int64)
result = np.zeros(1, np.int64)
if comm.rank == a:
    with win.lock(0, rma.LOCK_EXCLUSIVE):
        request = win.rput(np.int64(5), 0, 3)
    request.wait()
comm.barrier()
if comm.rank == b:
    with win.lock(0, rma.LOCK_SHARED):
        request = win.rget(result, 0, 3)
    assert request.wait()[0] == 5, result
win.free()
