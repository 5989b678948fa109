"""safe: sync: put and unlock on the root, bcast, then every other rank gets the element

Origin a puts 7 into element 5 of rank 0 under a shared lock and unlocks, then
broadcasts from root a. Every other rank gets element 5 after the bcast returns. The
root's calls before a bcast happen before the other ranks' calls after it, so each get is
ordered after the put; the gets among themselves never conflict.
"""

import numpy as np

import rma

comm = rma.init()
a = comm.size - 1
win = rma.Window.allocate(comm, 8, np.int64)
result = np.zeros(1, np.int64)
if comm.rank == a:
    with win.lock(0, rma.LOCK_SHARED):
        win.put(np.int64(7), 0, 5)
comm.bcast("done" if comm.rank == a else None, root=a)
if comm.rank != a:
    with win.lock(0, rma.LOCK_SHARED):
        win.get(result, 0, 5)
    assert result[0] == 7, result
win.free()
