"""safe: sync: lock_all put, flush, barrier, then another rank's get of the same element

Inside lock_all, origin a puts 7 into element 1 of rank 0 and calls flush(0), which
completes the put at the target; then every rank enters a barrier and origin b gets
element 1. The completion happens before the barrier, which happens before b's get, so
the put and the get are ordered even though the shared locks never exclude each other.
Compare racy_put_get_lock_all_flush_local.py.
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
        win.flush(0)  # complete at the target, before the barrier
    comm.barrier()
    if comm.rank == b:
        win.get(result, 0, 1)
        win.flush(0)
        assert result[0] == 7, result
win.free()
