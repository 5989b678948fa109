"""safe: local: rank 0 puts to its own window, flushes, then loads win.local

Rank 0 locks its own window exclusively, puts 7 into its element 2 (win.put(..., 0, 2)),
calls flush(0), which completes the put at the target (rank 0 itself), and only then loads
win.local[2]. Program order puts the load after the flush: ordered, and the load sees 7.
No other rank touches the window. Compare racy_local_load_self_put_before_flush.py.
"""

import numpy as np

import rma

comm = rma.init()
win = rma.Window.allocate(comm, 8, np.int64)
if comm.rank == 0:
    with win.lock(0, rma.LOCK_EXCLUSIVE):
        win.put(np.int64(7), 0, 2)
        win.flush(0)
        x = win.local[2]  # after the flush completed the put here
        assert x == 7, x
win.free()
