"""safe: origin: the origin array of a put is changed after flush_local

Inside lock_all, origin a puts buf = [1, 2, 3, 4] into elements 0..3 of rank 0, calls
flush_local(0) and then sets buf[0] = 9. flush_local completes the put at the origin: the
library has read buf, which may now change, even though the put need not be complete at
rank 0 yet. After flush(0), a gets the elements back and sees the values put, not 9.
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
        win.flush_local(0)  # local completion: buf is free again
        buf[0] = 9
        win.flush(0)  # now complete at rank 0 too, before a's get
        back = np.zeros(4, np.int64)
        win.get(back, 0, 0)
        win.flush(0)
        assert back.tolist() == [1, 2, 3, 4], back
win.free()
