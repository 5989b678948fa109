"""safe: buffer: two gets of one fence epoch fill the two halves of one array

Rank 0 fills its window with 0, 10, ..., 70 before the first fence. In the epoch that
fence opens, origin a gets elements 0..1 of rank 0 into value[:2] and elements 4..5 into
value[2:]. The two gets use one array but disjoint bytes of it, so neither writes where the
other does; after the closing fence value is [0, 10, 40, 50]. Twin of
racy_buffer_get_get_fence.py, where both gets fill the same bytes.
"""

import numpy as np

import rma

comm = rma.init()
a = comm.size - 1  # the origin; rank 0 is the target
win = rma.Window.allocate(comm, 8, np.int64)
value = np.zeros(4, np.int64)
if comm.rank == 0:
    win.local[:] = np.arange(8) * 10  # before the fence that opens the gets' epoch
win.fence()
if comm.rank == a:
    win.get(value[:2], 0, 0)
    win.get(value[2:], 0, 4)  # other bytes of the same array
win.fence()
if comm.rank == a:
    assert value.tolist() == [0, 10, 40, 50], value
win.free()
