"""racy: read: an element of a get's result view is read through the whole array before flush_local_all

Inside lock_all, origin a gets elements 0 and 1 of rank 0 into buf[2:4], a view of a
6-element array, and then reads buf[3] (element 1 of the view) before flush_local_all. The
get's local buffer is those bytes of buf whatever name reaches them; until flush_local_all
completes the get at the origin, buf[3] may hold -1 or the fetched 0.
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
        second = int(buf[3])  # too early: buf[3] is element 1 of the get's result
        win.flush_local_all()
win.free()
