"""safe: read: an element of a get's result view is read through the whole array after flush_local_all

Inside lock_all, origin a gets elements 0 and 1 of rank 0 into buf[2:4], a view of a
6-element array, calls flush_local_all, which completes the get at the origin, and then
reads buf[3]: 0. Twin of racy_read_get_view_lock_all_flush_local_all.py, which reads
before flush_local_all.
"""

import numpy as np

import rma

comm = rma.init()
a = comm.size - 1  # the origin; rank 0 is the target
win = rma.Window.allocate(comm, 8, np.int64)
with win.lock_all():
    if comm.rank == a:
        buf = np.full(6, -1, np.int64)
        win.get(buf[2:4], 0, 0)
        win.flush_local_all()
        second = int(buf[3])
        assert second == 0, buf
win.free()
