"""racy: read: the result of a compare_and_swap is turned into a list before flush(0)

Inside lock_all, origin a compare_and_swaps element 2 of rank 0 (0 becomes 1) with the old
value going into old, and calls old.tolist() before flush(0). The swap's old value arrives
in old only by the time the flush completes the call, so the list may hold the initial -1
or the fetched 0 (spec/002: a get's local buffer must not be accessed before completion).
"""

import numpy as np

import rma

comm = rma.init()
a = comm.size - 1  # the origin; rank 0 is the target
win = rma.Window.allocate(comm, 8, np.int64)
with win.lock_all():
    if comm.rank == a:
        old = np.full(1, -1, np.int64)
        win.compare_and_swap(np.int64(1), np.int64(0), old, 0, 2)
        seen = old.tolist()  # too early: before the flush that completes the swap
        win.flush(0)
win.free()
