"""safe: read: elements of an array next to a pending get's result view are read before the flush

Inside lock_all, origin a gets elements 0 and 1 of rank 0 into buf[2:4], a view of a
6-element array, and before flush(0) reads buf[0], buf[1], buf[4] and buf[5]. The get's
local buffer is only the bytes of buf[2:4]; the neighbours are no part of any pending call,
so reading them early is allowed and they still hold -1. A checker that watches a whole
array, not the bytes a call uses, would report this. Compare
racy_read_get_view_lock_all_flush_local_all.py.
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
        outside = [int(buf[0]), int(buf[1]), int(buf[4]), int(buf[5])]  # not the get's bytes
        assert outside == [-1, -1, -1, -1], outside
        win.flush(0)
        assert buf.tolist() == [-1, -1, 0, 0, -1, -1], buf
win.free()
