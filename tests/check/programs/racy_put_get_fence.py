"""racy: put-get: partially overlapping put and get in one fence epoch

Origin a puts elements 0..3 of rank 0 while origin b gets elements 3..5, between the same
two fences. The ranges share one element (element 3, bytes 24..31), and within a fence
epoch the put is not complete before the closing fence, so the get may read the old value,
the new one, or a mix. With 2 ranks b is rank 0 reading its own window through a get.
"""

import numpy as np

import rma

comm = rma.init()
a, b = comm.size - 1, comm.size - 2  # two different origins; at 2 ranks b is the target itself
win = rma.Window.allocate(comm, 8, np.int64)
result = np.zeros(3, np.int64)
win.fence()
if comm.rank == a:
    win.put(np.arange(4, dtype=np.int64), 0, target=np.s_[0:4])
if comm.rank == b:
    win.get(result, 0, target=np.s_[3:6])
win.fence()
win.free()
