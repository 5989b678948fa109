"""racy: buffer: two gets of one fence epoch fill the same result array

Rank 0 fills its window with 0, 10, ..., 70 before the first fence. In the epoch that
fence opens, origin a gets elements 0..1 of rank 0 into value and then elements 4..5 into
the same value. Both gets are pending until the closing fence and both write value's 16
bytes, in no defined order: value may end up [0, 10], [40, 50] or a mix. spec/002: the
local buffer of a get must not be accessed (here, by another call) until the
synchronization call completes it.
"""

import numpy as np

import rma

comm = rma.init()
a = comm.size - 1  # the origin; rank 0 is the target
win = rma.Window.allocate(comm, 8, np.int64)
value = np.zeros(2, np.int64)
if comm.rank == 0:
    win.local[:] = np.arange(8) * 10  # before the fence that opens the gets' epoch
win.fence()
if comm.rank == a:
    win.get(value, 0, 0)
    win.get(value, 0, 4)  # fills the same bytes as the pending get above
win.fence()
win.free()
