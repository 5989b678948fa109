"""racy: buffer: a put sends an array that a pending get is still filling, under one lock

Under an exclusive lock on rank 0, origin a gets elements 0..3 of rank 0 into buf and, to
copy them to elements 4..7, puts buf there at once, without a flush between. The put reads
buf while the get may still be writing it (the get completes at the origin only at a
flush, flush_local or the unlock), so the put may send the old contents of buf, the new
ones or a mix. The two calls touch disjoint elements at the target; the conflict is in
the origin's own array.
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
        win.put(buf, 0, 4)  # reads buf before the get into it completed
win.free()
