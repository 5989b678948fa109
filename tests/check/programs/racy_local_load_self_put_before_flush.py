"""racy: local: rank 0 puts to its own window and sums win.local before the flush

Rank 0 locks its own window exclusively, puts 7 into its element 2 (win.put(..., 0, 2))
and then computes win.local.sum(), which loads every element, element 2 included, before
calling flush(0). The put is complete at the target (rank 0 itself) only at the flush, so
the load is concurrent with it, even though both are made by one rank in program order.
The exclusive lock keeps the other ranks out; it does not complete rank 0's own put.
Compare safe_local_load_after_self_put_flush.py.
"""

import numpy as np

import rma

comm = rma.init()
win = rma.Window.allocate(comm, 8, np.int64)
if comm.rank == 0:
    with win.lock(0, rma.LOCK_EXCLUSIVE):
        win.put(np.int64(7), 0, 2)
        total = win.local.sum()  # loads bytes 0..63 while the put to bytes 16..23 is in flight
        win.flush(0)
win.free()
