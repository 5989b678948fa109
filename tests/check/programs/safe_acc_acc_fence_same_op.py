"""safe: acc-acc: every rank accumulates with SUM into all of rank 0's window, one fence epoch

Concurrent accumulates to the same locations are allowed when they use the same op and
dtype: the outcome is as if they happened in some order. Every rank adds rank+1 to all 8
int64 elements of rank 0 in one fence epoch; a get in the next epoch checks the sum.
"""

import numpy as np

import rma

comm = rma.init()
win = rma.Window.allocate(comm, 8, np.int64)
result = np.zeros(8, np.int64)
win.fence()
win.accumulate(np.full(8, comm.rank + 1, np.int64), 0, 0, op=rma.SUM)
win.fence()
if comm.rank == 0:
    win.get(result, 0)
win.fence()
if comm.rank == 0:
    assert (result == comm.size * (comm.size + 1) // 2).all(), result
win.free()
