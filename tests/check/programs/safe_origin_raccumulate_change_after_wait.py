"""safe: origin: the origin array of an raccumulate is changed after the request's wait

Under a shared lock on rank 0, origin a issues req = win.raccumulate(ones, 0, 2) with
ones = [1, 1], calls req.wait(), which completes the accumulate at the origin, and then
overwrites ones[:] = 5. It also changes the array again after the unlock. Neither change
can reach rank 0.
"""

import numpy as np

import rma

comm = rma.init()
a = comm.size - 1  # the origin; rank 0 is the target
win = rma.Window.allocate(comm, 8, np.int64)
if comm.rank == a:
    ones = np.ones(2, np.int64)
    with win.lock(0, rma.LOCK_SHARED):
        req = win.raccumulate(ones, 0, 2, op=rma.SUM)
        req.wait()  # complete at the origin
        ones[:] = 5
    ones[:] = 6  # after the unlock as well
win.free()
