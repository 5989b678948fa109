"""racy: local: another rank puts and calls flush_local, barrier, then rank 0 loads win.local

Inside lock_all, origin a puts 7 into element 1 of rank 0 and calls flush_local(0); then
every rank enters a barrier and rank 0 loads win.local[1]. flush_local completes the put
only at the origin (its buffer may be reused); at rank 0 the put is complete only at a's
unlock_all, which comes after the barrier. So the put's completion does not happen before
rank 0's load: they are concurrent. With flush(0) instead this is
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
        win.flush_local(0)  # origin-side completion only
    comm.barrier()
    if comm.rank == 0:
        seen = int(win.local[1])  # bytes 8..15; the put may still be landing
win.free()
