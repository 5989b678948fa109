"""safe: read: the result of a get_accumulate is summed after complete ends the access epoch

Rank 0 exposes its window to origin a with post. Origin a starts an access epoch to rank 0,
calls get_accumulate(ones, old, 0, 3), calls complete, which completes the call at the
origin, and only then computes old.sum(): the two elements held 0, so the sum is 0. Twin
of racy_read_get_accumulate_pscw_sum.py, which sums before complete.
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
    win.complete()
    total = old.sum()
    assert total == 0, old
if comm.rank == 0:
    win.wait()
win.free()
