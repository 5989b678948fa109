"""safe: read: the result of an rget is summed after the request's wait

Under a shared lock on rank 0, origin a issues req = win.rget(out, 0, 0) for elements 0..2,
calls req.wait(), which completes the get at the origin, and then computes out.sum(): 0.
Twin of racy_read_rget_lock_shared_sum.py, which sums before the wait.
"""

import numpy as np

import rma

comm = rma.init()
a = comm.size - 1  # the origin; rank 0 is the target
win = rma.Window.allocate(comm, 8, np.int64)
if comm.rank == a:
    out = np.full(3, -1, np.int64)
    with win.lock(0, rma.LOCK_SHARED):
        req = win.rget(out, 0, 0)
        req.wait()
        total = out.sum()
        assert total == 0, out
win.free()
