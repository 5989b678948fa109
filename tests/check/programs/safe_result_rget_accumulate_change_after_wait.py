"""safe: result: the result array of an rget_accumulate is changed after the request's wait

Under a shared lock on rank 0, origin a issues req = win.rget_accumulate(ones, got, 0, 2),
calls req.wait(), which completes it at the origin, and then overwrites got. It also reuses
got for a second call after that one completed.
"""

import numpy as np

import rma

comm = rma.init()
a = comm.size - 1  # the origin; rank 0 is the target
win = rma.Window.allocate(comm, 8, np.int64)
if comm.rank == a:
    ones, got = np.ones(2, np.int64), np.zeros(2, np.int64)
    with win.lock(0, rma.LOCK_SHARED):
        req = win.rget_accumulate(ones, got, 0, 2, op=rma.SUM)
        req.wait()
        got[:] = 5
        win.rget_accumulate(ones, got, 0, 2, op=rma.SUM).wait()
        assert got.tolist() == [1, 1]
win.free()
