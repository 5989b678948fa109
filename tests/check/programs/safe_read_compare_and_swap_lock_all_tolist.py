"""safe: read: the result of a compare_and_swap is turned into a list after flush(0)

Inside lock_all, origin a compare_and_swaps element 2 of rank 0 (0 becomes 1) with the old
value going into old, calls flush(0), which completes the call at the origin and the
target, and then calls old.tolist(): [0]. Twin of racy_read_compare_and_swap_lock_all_tolist.py,
which reads before the flush.
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
        win.flush(0)
        seen = old.tolist()
        assert seen == [0], seen
win.free()
