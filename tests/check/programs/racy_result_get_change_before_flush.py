"""racy: result: the result array of a get is changed before the flush that completes the get

Inside lock_all, origin a gets elements 0..3 of rank 0 into out and then sets out[0] = 9
before calling flush(0). A get only starts the transfer: until a call completes it at the
origin (flush, flush_local, unlock...), the library may still write out, so out[0] may end
up 9 or rank 0's value. spec/002: the result buffer of an RMA call must not be accessed
until the synchronization call that completes it.
"""

import numpy as np

import rma

comm = rma.init()
a = comm.size - 1  # the origin; rank 0 is the target
win = rma.Window.allocate(comm, 8, np.int64)
with win.lock_all():
    if comm.rank == a:
        out = np.zeros(4, np.int64)
        win.get(out, 0, 0)
        out[0] = 9  # too early: the get may still write out
        win.flush(0)
win.free()
