"""safe: buffer: an accumulate adds from an array that a get of the previous fence epoch filled

Rank 0 fills its window with 0, 10, ..., 70 before the first fence. In the epoch that
fence opens, origin a gets elements 0..1 of rank 0 into buf; the next fence completes the
get, and in the epoch after it a accumulates buf into elements 6..7, which become 60 and
80. Twin of racy_buffer_get_then_accumulate_fence.py, where both calls share one epoch.
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
win.fence()  # completes the get: buf is [0, 10]
if comm.rank == a:
    win.accumulate(buf, 0, 6, op=rma.SUM)
win.fence()
if comm.rank == 0:
    assert win.local[6:].tolist() == [60, 80], win.local
win.free()
