"""racy: put-get: put, flush_local, barrier, then another rank's get of the same element

Inside lock_all, origin a puts into element 1 of rank 0 and calls flush_local(0), then all
ranks meet at a barrier and origin b gets element 1. flush_local completes the put only at
the origin; at the target it completes at a's unlock_all, which comes after the barrier.
So the put's completion does not happen before b's get: they are concurrent. (With
flush(0) instead, see safe_sync_lock_all_flush_barrier.py.)
"""

import numpy as np

import rma

comm = rma.init()
a, b = comm.size - 1, comm.size - 2  # two different origins; at 2 ranks b is the target itself
win = rma.Window.allocate(comm, 8, np.int64)
result = np.zeros(1, np.int64)
with win.lock_all():
    if comm.rank == a:
        win.put(np.int64(7), 0, 1)
        win.flush_local(0)  # origin-side completion only
    comm.barrier()
    if comm.rank == b:
        win.get(result, 0, 1)
        win.flush(0)
win.free()
