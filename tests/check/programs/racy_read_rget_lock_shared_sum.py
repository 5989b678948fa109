"""racy: read: the result of an rget is summed before the request's wait

Under a shared lock on rank 0, origin a issues req = win.rget(out, 0, 0) for elements 0..2
and computes out.sum() before req.wait(). For a request-based call the request's wait (or
a test that returns True) completes it at the origin; until then out may not hold the
fetched values.
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
        total = out.sum()  # too early: before req.wait()
        req.wait()
win.free()
