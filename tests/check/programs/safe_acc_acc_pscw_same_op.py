"""safe: acc-acc: every rank accumulates with SUM into one element in one PSCW epoch

Rank 0 posts to all ranks (itself included) and every rank accumulates rank+1 into
element 0. The accumulates are concurrent but use the same op and dtype, which MPI
allows. After its wait, rank 0 reads the sum with a get under a lock on itself: every
origin's complete happens before that wait returns, so the get is ordered after them.
"""

import numpy as np

import rma

comm = rma.init()
win = rma.Window.allocate(comm, 8, np.int64)
result = np.zeros(1, np.int64)
if comm.rank == 0:
    win.post(range(comm.size))
with win.start([0]):
    win.accumulate(np.int64(comm.rank + 1), 0, 0, op=rma.SUM)
if comm.rank == 0:
    win.wait()
    with win.lock(0, rma.LOCK_SHARED):
        win.get(result, 0, 0)
    assert result[0] == comm.size * (comm.size + 1) // 2, result
win.free()
