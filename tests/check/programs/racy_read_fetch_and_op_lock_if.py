"""racy: read: a branch tests the result of a fetch_and_op before the unlock that completes it

Under an exclusive lock on rank 0, origin a adds 5 to element 1 with fetch_and_op into old
and then branches on old[0] > 3 while the lock is still held. The fetched value reaches old
only by the time the unlock completes the call at the origin; before that old may still
hold its initial -1 or already the fetched 0, so the branch is taken on an undefined value.
"""

import numpy as np

import rma

comm = rma.init()
a = comm.size - 1  # the origin; rank 0 is the target
win = rma.Window.allocate(comm, 8, np.int64)
if comm.rank == a:
    old = np.full(1, -1, np.int64)
    with win.lock(0, rma.LOCK_EXCLUSIVE):
        win.fetch_and_op(np.int64(5), old, 0, 1, op=rma.SUM)
        if old[0] > 3:  # too early: read before the unlock
            print("someone added before us")
win.free()
