"""racy: put-put: two puts to one element inside one exclusive lock epoch, no flush between

The exclusive lock keeps other ranks out, but it does not order the origin's own puts:
both are completed only by the unlock (or a flush), so the two puts of the last rank to
element 0 of rank 0 are concurrent and write the same bytes.
"""

import numpy as np

import rma

comm = rma.init()
origin = comm.size - 1
win = rma.Window.allocate(comm, 8, np.int64)
if comm.rank == origin:
    with win.lock(0, rma.LOCK_EXCLUSIVE):
        win.put(np.int64(1), 0, 0)
        win.put(np.int64(2), 0, 0)
win.free()
