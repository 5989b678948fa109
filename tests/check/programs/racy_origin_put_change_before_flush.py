"""racy: origin: the origin array of a put is changed before the flush that completes the put

Inside lock_all, origin a puts buf = [1, 2, 3, 4] into elements 0..3 of rank 0 and then
sets buf[0] = 9 before calling flush(0). A put only starts the transfer: until a call
completes it at the origin (flush, flush_local, unlock...), the library may still read
buf, so rank 0 may receive 1 or 9 in element 0. spec/002: the origin buffer of an RMA call
must not be updated until the synchronization call that completes it.
"""

import numpy as np

import rma

comm = rma.init()
a = comm.size - 1  # the origin; rank 0 is the target
win = rma.Window.allocate(comm, 8, np.int64)
with win.lock_all():
    if comm.rank == a:
        buf = np.array([1, 2, 3, 4], np.int64)
        win.put(buf, 0, 0)
        buf[0] = 9  # too early: the put may not have read buf yet
        win.flush(0)
win.free()
