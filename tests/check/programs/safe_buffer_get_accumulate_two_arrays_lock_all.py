"""safe: buffer: a get_accumulate with distinct origin and result arrays

Inside lock_all, origin a calls get_accumulate(data, old, 0, 2): data = [5, 6] is added to
elements 2..3 of rank 0 and their old values go into old, a separate array. After flush(0)
old is [0, 0]; a get in the same epoch, after that flush, reads [5, 6] back. Twin of
racy_buffer_get_accumulate_same_array_lock_all.py, which passes one array for both.
"""

import numpy as np

import rma

comm = rma.init()
a = comm.size - 1  # the origin; rank 0 is the target
win = rma.Window.allocate(comm, 8, np.int64)
with win.lock_all():
    if comm.rank == a:
        data, old = np.array([5, 6], np.int64), np.full(2, -1, np.int64)
        win.get_accumulate(data, old, 0, 2, op=rma.SUM)
        win.flush(0)
        assert old.tolist() == [0, 0], old
        now = np.zeros(2, np.int64)
        win.get(now, 0, 2)
        win.flush(0)
        assert now.tolist() == [5, 6], now
win.free()
