"""safe: put-put: even and odd elements from two origins in one fence epoch

Origin a puts the even elements (target=np.s_[0::2]) and origin b the odd elements
(np.s_[1::2]) of rank 0, between the same fences. The two strided regions span the same
extent but share no byte, so the concurrent puts do not conflict. A checker that compares
bounding ranges instead of the bytes actually touched would flag it.
"""

import numpy as np

import rma

comm = rma.init()
a, b = comm.size - 1, comm.size - 2  # two different origins; at 2 ranks b is the target itself
win = rma.Window.allocate(comm, 8, np.int64)
result = np.zeros(8, np.int64)
win.fence()
if comm.rank == a:
    win.put(np.full(4, 1, np.int64), 0, target=np.s_[0::2])
if comm.rank == b:
    win.put(np.full(4, 2, np.int64), 0, target=np.s_[1::2])
win.fence()
if comm.rank == 0:
    win.get(result, 0)
win.fence()
if comm.rank == 0:
    assert result.tolist() == [1, 2] * 4, result
win.free()
