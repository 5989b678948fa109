"""racy: buffer: an accumulate adds from an array that a get of the same fence epoch is filling

Rank 0 fills its window with 0, 10, ..., 70 before the first fence. In the epoch that
fence opens, origin a gets elements 0..1 of rank 0 into buf and accumulates buf into
elements 6..7. Both calls are pending until the closing fence; the accumulate may read buf
before, during or after the get writes it, so rank 0 may gain 0, 10 or -1, -1 (buf's
initial values). The target elements are disjoint; the conflict is in buf.
"""

import numpy as np

import rma

comm = rma.init()
a = comm.size - 1  # the origin; rank 0 is the target
win = rma.Window.allocate(comm, 8, np.int64)
buf = np.full(2, -1, np.int64)
if comm.rank == 0:
    win.local[:] = np.arange(8) * 10  # before the fence that opens the epoch
win.fence()
if comm.rank == a:
    win.get(buf, 0, 0)
    win.accumulate(buf, 0, 6, op=rma.SUM)  # reads buf before the get into it completed
win.fence()
win.free()
