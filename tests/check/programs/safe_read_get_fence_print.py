"""safe: read: the result of a get is printed after the fence that closes its epoch

Rank 0 fills its window with 0, 10, ..., 70 before the first fence. In the epoch that
fence opens, origin a gets element 5 into value; it prints value[0] only after the next
fence, which completes the get at the origin, so the print shows 50. Twin of
racy_read_get_fence_print.py, which prints before that fence.
"""

import numpy as np

import rma

comm = rma.init()
a = comm.size - 1  # the origin; rank 0 is the target
win = rma.Window.allocate(comm, 8, np.int64)
value = np.zeros(1, np.int64)
if comm.rank == 0:
    win.local[:] = np.arange(8) * 10  # before the fence that opens the get's epoch
win.fence()
if comm.rank == a:
    win.get(value, 0, 5)
win.fence()
if comm.rank == a:
    print("element 5 of rank 0:", value[0])
    assert value[0] == 50, value
win.free()
