"""racy: read: the result of a get_accumulate is summed before complete ends the access epoch

Rank 0 exposes its window to origin a with post. Origin a starts an access epoch to rank 0,
calls get_accumulate(ones, old, 0, 3), which adds 1 to elements 3 and 4 and fetches what
they held into old, and then computes old.sum() before calling complete. Until complete
returns, the fetched values may not be in old yet, so the sum is undefined (spec/002: the
local buffer of a get must not be accessed until the synchronization call completes it).
"""

import numpy as np

import rma

comm = rma.init()
a = comm.size - 1  # the origin; rank 0 is the target
win = rma.Window.allocate(comm, 8, np.int64)
if comm.rank == 0:
    win.post([a])
if comm.rank == a:
    ones, old = np.ones(2, np.int64), np.full(2, -1, np.int64)
    win.start([0])
    win.get_accumulate(ones, old, 0, 3, op=rma.SUM)
    total = old.sum()  # too early: old is filled by the time complete returns, not before
    win.complete()
if comm.rank == 0:
    win.wait()
win.free()
