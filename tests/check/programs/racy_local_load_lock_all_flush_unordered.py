"""racy: local: lock_all, another rank puts and flushes, rank 0 loads win.local with nothing between

Inside lock_all, origin a puts 7 into element 1 of rank 0 and calls flush(0), which
completes the put at rank 0. Rank 0 loads win.local[1] in the same lock_all epoch, with no
barrier, message or other call that would order its load after a's flush (shared locks
never exclude each other, and lock_all is no synchronization between ranks). The load may
see 0, 7 or a torn value: it is concurrent with the put. Compare
safe_local_load_after_flush_barrier.py.
"""

import numpy as np

import rma

comm = rma.init()
a = comm.size - 1  # the origin; never rank 0, the owner
win = rma.Window.allocate(comm, 8, np.int64)
with win.lock_all():
    if comm.rank == a:
        win.put(np.int64(7), 0, 1)
        win.flush(0)  # complete at rank 0, but rank 0 does not know when
    if comm.rank == 0:
        seen = win.local[1]  # a load of bytes 8..15, not ordered after the flush
win.free()
