"""racy: read: the result of a get is printed inside the fence epoch, before the closing fence

Rank 0 fills its window with 0, 10, ..., 70 before the first fence. In the epoch that
fence opens, origin a gets element 5 into value and prints value[0] at once. The get only
starts the transfer; the fence that closes the epoch is what completes it at the origin, so
the print may show 0 (what value held before) or 50. spec/002: the local buffer of a get
must not be accessed until the synchronization call that completes it.
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
    print("element 5 of rank 0:", value[0])  # too early: the get may not have arrived
win.fence()
win.free()
