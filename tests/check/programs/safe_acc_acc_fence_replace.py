"""safe: acc-acc: every rank accumulates with REPLACE into one element in one fence epoch

This is racy_put_put_fence.py with put replaced by accumulate(op=REPLACE). Accumulates
with the same op and dtype may target the same location concurrently; the outcome is as
if they occurred in some order, so element 0 ends as one of the ranks. Not a conflict.
"""

import numpy as np

import rma

comm = rma.init()
win = rma.Window.allocate(comm, 8, np.int64)
result = np.zeros(1, np.int64)
win.fence()
win.accumulate(np.int64(comm.rank), 0, 0, op=rma.REPLACE)
win.fence()
if comm.rank == 0:
    win.get(result, 0, 0)
win.fence()
if comm.rank == 0:
    assert 0 <= result[0] < comm.size, result
win.free()
