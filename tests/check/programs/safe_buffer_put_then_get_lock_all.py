"""safe: buffer: a get fills an array after flush_local completed the put that sent it

Inside lock_all, origin a puts buf = [1, 2] into elements 0..1 of rank 0, calls
flush_local(0), which completes the put at the origin (buf may be reused; the data need
not have reached rank 0 yet), and then gets elements 4..5 of rank 0 into buf. Completion at
the origin is all that reusing a buffer needs. Twin of racy_buffer_put_then_get_lock_all.py,
which has no flush_local between the two calls.
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
        win.flush_local(0)  # the put no longer reads buf
        win.get(buf, 0, 4)
        win.flush(0)
        assert buf.tolist() == [0, 0], buf
win.free()
