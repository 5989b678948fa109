"""safe: sync: every rank puts its own element, gather to rank 0, rank 0 gets them all

Every rank r puts r+1 into element r of rank 0 under a shared lock (disjoint elements,
so the puts do not conflict with each other) and unlocks. Then all ranks gather to
root 0, and rank 0 gets the whole window. Each rank's calls before the gather happen
before the root's calls after it, so the get is ordered after every put.
"""

import numpy as np

import rma

comm = rma.init()
win = rma.Window.allocate(comm, 8, np.int64)
result = np.zeros(comm.size, np.int64)
with win.lock(0, rma.LOCK_SHARED):
    win.put(np.int64(comm.rank + 1), 0, comm.rank)
comm.gather(comm.rank, root=0)
if comm.rank == 0:
    with win.lock(0, rma.LOCK_SHARED):
        win.get(result, 0, target=np.s_[: comm.size])
    assert result.tolist() == list(range(1, comm.size + 1)), result
win.free()
