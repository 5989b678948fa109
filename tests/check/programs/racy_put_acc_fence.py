"""racy: put-acc: a put and a SUM accumulate to the same element in one fence epoch

Origin a puts 5 into element 0 of rank 0 while origin b accumulates 1 into it, between the
same fences. Accumulates are atomic only with respect to other accumulates; a put racing
with an accumulate on the same bytes is a conflict, so the result (5, 6 or 1) is undefined.
"""

import numpy as np

import rma

comm = rma.init()
a, b = comm.size - 1, comm.size - 2  # two different origins; at 2 ranks b is the target itself
win = rma.Window.allocate(comm, 8, np.int64)
win.fence()
if comm.rank == a:
    win.put(np.int64(5), 0, 0)
if comm.rank == b:
    win.accumulate(np.int64(1), 0, 0, op=rma.SUM)
win.fence()
win.free()
