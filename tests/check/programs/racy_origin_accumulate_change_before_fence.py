"""racy: origin: the origin array of an accumulate is overwritten inside its fence epoch

Between two fences, origin a accumulates (SUM) ones = [1, 1] into elements 2..3 of rank 0
and then overwrites ones[:] = 5 before the closing fence. The accumulate completes at the
origin only at that fence, so the library may still read the array: rank 0 may add 1 or 5.
"""

import numpy as np

import rma

comm = rma.init()
a = comm.size - 1  # the origin; rank 0 is the target
win = rma.Window.allocate(comm, 8, np.int64)
win.fence()
if comm.rank == a:
    ones = np.ones(2, np.int64)
    win.accumulate(ones, 0, 2, op=rma.SUM)
    ones[:] = 5  # before the fence that completes the accumulate
win.fence()
win.free()
