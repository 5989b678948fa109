"""racy: buffer: a get fills an array that a pending put is still sending, inside lock_all

Inside lock_all, origin a puts buf = [1, 2] into elements 0..1 of rank 0 and then, before
anything completes the put, gets elements 4..5 of rank 0 back into buf. The put may still
be reading buf (spec/002: the local buffer of an RMA call must not be updated until the
call completes), so rank 0 may receive [1, 2], zeros or a mix. The two calls touch
disjoint elements at the target.
"""

import numpy as np

import rma

comm = rma.init()
a = comm.size - 1  # the origin; rank 0 is the target
win = rma.Window.allocate(comm, 8, np.int64)
with win.lock_all():
    if comm.rank == a:
        buf = np.array([1, 2], np.int64)
        win.put(buf, 0, 0)
        win.get(buf, 0, 4)  # writes buf while the put may still read it
        win.flush(0)
win.free()
