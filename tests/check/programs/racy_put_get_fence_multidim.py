"""racy: put-get: a column put and a row get of a 2-D window cross at one element

Rank 0's window is a 4x4 int64 array. Origin a puts column 1 (a strided region) and
origin b gets row 2, in the same fence epoch. The two regions share element (2, 1) only,
so a checker must compare the strided byte sets, not just start offsets. Within one fence
epoch the put and the get are concurrent: erroneous.
"""

import numpy as np

import rma

comm = rma.init()
a, b = comm.size - 1, comm.size - 2  # two different origins; at 2 ranks b is the target itself
win = rma.Window.allocate(comm, (4, 4), np.int64)
row = np.zeros(4, np.int64)
win.fence()
if comm.rank == a:
    win.put(np.full(4, 7, np.int64), 0, target=np.s_[:, 1])
if comm.rank == b:
    win.get(row, 0, target=np.s_[2, :])
win.fence()
win.free()
