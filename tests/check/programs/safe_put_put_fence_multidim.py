"""safe: put-put: each rank puts its own column of a 2-D window in one fence epoch

Rank 0's window is a 4 x size int64 array; rank r puts column r (target=np.s_[:, r]), a
strided region interleaved with every other rank's column. All puts are concurrent
(one fence epoch) but the columns share no byte, so nothing conflicts. A get in the next
fence epoch checks the result.
"""

import numpy as np

import rma

comm = rma.init()
win = rma.Window.allocate(comm, (4, comm.size), np.int64)
result = np.zeros((4, comm.size), np.int64)
win.fence()
win.put(np.full(4, comm.rank + 1, np.int64), 0, target=np.s_[:, comm.rank])
win.fence()
if comm.rank == 0:
    win.get(result, 0)
win.fence()
if comm.rank == 0:
    assert (result == np.arange(1, comm.size + 1)).all(), result
win.free()
