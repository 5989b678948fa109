"""safe: put-put: two origins put to adjacent, disjoint ranges in one fence epoch

Origin a puts elements 0..3 (bytes 0..31) and origin b puts elements 4..7 (bytes 32..63)
of rank 0 between the same two fences. The puts are concurrent but touch no common byte,
so they do not conflict. A checker that rounds ranges outwards or compares inclusive
ends would flag this near miss. A get in the next fence epoch checks the result.
"""

import numpy as np

import rma

comm = rma.init()
a, b = comm.size - 1, comm.size - 2  # two different origins; at 2 ranks b is the target itself
win = rma.Window.allocate(comm, 8, np.int64)
result = np.zeros(8, np.int64)
win.fence()
if comm.rank == a:
    win.put(np.full(4, 1, np.int64), 0, target=np.s_[0:4])
if comm.rank == b:
    win.put(np.full(4, 2, np.int64), 0, target=np.s_[4:8])
win.fence()
if comm.rank == 0:
    win.get(result, 0)
win.fence()
if comm.rank == 0:
    assert result.tolist() == [1, 1, 1, 1, 2, 2, 2, 2], result
win.free()
