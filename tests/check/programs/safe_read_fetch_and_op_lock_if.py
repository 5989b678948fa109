"""safe: read: a branch tests the result of a fetch_and_op after the unlock that completes it

Under an exclusive lock on rank 0, origin a adds 5 to element 1 with fetch_and_op into old;
the unlock completes the call at the origin, and only then does a branch on old[0] > 3. The
element held 0, so old is [0] and the branch is not taken. Twin of
racy_read_fetch_and_op_lock_if.py, which branches inside the lock.
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
    if old[0] > 3:
        print("someone added before us")
    assert old[0] == 0, old
win.free()
