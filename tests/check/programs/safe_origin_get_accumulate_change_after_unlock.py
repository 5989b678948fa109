"""safe: origin: the origin array of a get_accumulate is changed after the unlock

Origin a locks rank 0 exclusively, calls get_accumulate (SUM) with origin buf = [3, 4]
into elements 5..6 of rank 0, unlocks (which completes the call at the origin and at the
target) and only then sets buf[0] = 9. The result holds the old values (0, 0).
"""

import numpy as np

import rma

comm = rma.init()
a = comm.size - 1  # the origin; rank 0 is the target
win = rma.Window.allocate(comm, 8, np.int64)
if comm.rank == a:
    buf = np.array([3, 4], np.int64)
    old = np.ones(2, np.int64)
    with win.lock(0, rma.LOCK_EXCLUSIVE):
        win.get_accumulate(buf, old, 0, 5, op=rma.SUM)
    buf[0] = 9  # after the unlock completed the call
    assert old.tolist() == [0, 0], old
win.free()
