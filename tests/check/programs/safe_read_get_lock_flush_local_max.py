"""safe: read: the maximum of a get's result is taken after flush_local(0), still inside the lock

Under an exclusive lock on rank 0, origin a gets elements 4..7 into value, calls
flush_local(0) and then value.max(). For a get, completion at the origin means the data has
arrived in value, so flush_local is enough (no flush or unlock is needed) and the maximum
is 0. Twin of racy_read_get_lock_flush_local_max.py, which reads before flush_local.
"""

import numpy as np

import rma

comm = rma.init()
a = comm.size - 1  # the origin; rank 0 is the target
win = rma.Window.allocate(comm, 8, np.int64)
if comm.rank == a:
    value = np.full(4, -1, np.int64)
    with win.lock(0, rma.LOCK_EXCLUSIVE):
        win.get(value, 0, 4)
        win.flush_local(0)
        biggest = value.max()
        assert biggest == 0, value
win.free()
