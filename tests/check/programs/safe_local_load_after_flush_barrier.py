"""safe: local: another rank puts and flushes, barrier, then rank 0 loads win.local

Inside lock_all, origin a puts 7 into element 1 of rank 0 and calls flush(0), which
completes the put at rank 0; then every rank enters a barrier and rank 0 loads
win.local[1]. The put's completion happens before a's barrier, which happens before rank
0 leaves the barrier and loads: ordered, and the load sees 7 (the window is unified: puts
land in the memory win.local shows). Compare racy_local_load_lock_all_flush_unordered.py
and racy_local_load_after_flush_local_barrier.py.
"""

import numpy as np

import rma

comm = rma.init()
a = comm.size - 1  # the origin; never rank 0, the owner
win = rma.Window.allocate(comm, 8, np.int64)
with win.lock_all():
    if comm.rank == a:
        win.put(np.int64(7), 0, 1)
        win.flush(0)  # complete at rank 0, before the barrier
    comm.barrier()
    if comm.rank == 0:
        x = win.local[1]
        assert x == 7, x
win.free()
