"""safe: put-get: on a window over the caller's array, rank a's flushed put comes before rank 0's get

The race-free twin of racy_put_get_create_lock_all.py: rank a puts into element 1 of rank 0
and flushes, then every rank meets in a barrier, then rank 0 gets element 1. The flush
completed the put at rank 0 before the barrier, which orders it before the get.
"""

import numpy as np

import rma

comm = rma.init()
a = comm.size - 1  # the writer; never rank 0
mine = np.zeros(4, np.int64)
win = rma.Window.create(comm, mine)
out = np.zeros(1, np.int64)
win.lock_all()
if comm.rank == a:
    win.put(np.full(1, 7, np.int64), 0, 1)
    win.flush(0)
comm.barrier()
if comm.rank == 0:
    win.get(out, 0, 1)
    win.flush(0)
    assert int(out[0]) == (7 if a != 0 else 0)
win.unlock_all()
comm.barrier()
win.free()
