"""racy: acc-acc: SUM and MAX accumulates from two origins to one element in one fence epoch

Concurrent accumulates to the same location are allowed only when they use the same op
(or NO_OP) on the same dtype. Origin a adds with SUM and origin b combines with MAX, both
to element 2 of rank 0 inside one fence epoch, from different origins (so accumulate
ordering does not apply): the two updates are concurrent and conflicting.
"""

import numpy as np

import rma

comm = rma.init()
a, b = comm.size - 1, comm.size - 2  # two different origins; at 2 ranks b is the target itself
win = rma.Window.allocate(comm, 8, np.int64)
win.fence()
if comm.rank == a:
    win.accumulate(np.int64(3), 0, 2, op=rma.SUM)
if comm.rank == b:
    win.accumulate(np.int64(10), 0, 2, op=rma.MAX)
win.fence()
win.free()
