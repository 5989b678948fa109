"""racy: result: the result of a fetch_and_op is overwritten before the unlock that completes it

Under an exclusive lock on rank 0, origin a calls fetch_and_op(one, old, 0, 1) and then
clears old[:] = 0 before the unlock. The fetched value may arrive in old at any time until
the unlock completes the call at the origin, so old may end up 0 or the fetched value.
"""

import numpy as np

import rma

comm = rma.init()
a = comm.size - 1  # the origin; rank 0 is the target
win = rma.Window.allocate(comm, 8, np.int64)
if comm.rank == a:
    one, old = np.ones(1, np.int64), np.full(1, -1, np.int64)
    with win.lock(0, rma.LOCK_EXCLUSIVE):
        win.fetch_and_op(one, old, 0, 1, op=rma.SUM)
        old[:] = 0  # too early: the fetched value may not have arrived yet
win.free()
