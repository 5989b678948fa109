"""safe: buffer: a put sends an array after a flush completed the get that filled it

Under an exclusive lock on rank 0, origin a gets elements 0..3 of rank 0 into buf, calls
flush(0), which completes the get (buf now holds rank 0's zeros), and then puts buf into
elements 4..7. The put reads buf only after the get finished writing it. Twin of
racy_buffer_get_then_put_lock.py, which has no flush between the two calls.
"""

import numpy as np

import rma

comm = rma.init()
a = comm.size - 1  # the origin; rank 0 is the target
win = rma.Window.allocate(comm, 8, np.int64)
if comm.rank == a:
    buf = np.full(4, -1, np.int64)
    with win.lock(0, rma.LOCK_EXCLUSIVE):
        win.get(buf, 0, 0)
        win.flush(0)
        win.put(buf, 0, 4)
    assert buf.tolist() == [0, 0, 0, 0], buf
win.free()
