"""racy: local: rank 0 copies win.local while another rank accumulates into it under lock_all

Inside lock_all, origin a accumulates (SUM) 1 into element 3 of rank 0 and flushes, while
rank 0 takes np.copy(win.local), a load of the whole window. Nothing orders the copy
before or after the accumulate (no barrier, no message; lock_all orders nothing between
ranks). Concurrent accumulates are atomic only with respect to each other: a load of
bytes that an accumulate updates is a conflict like a get of them.
"""

import numpy as np

import rma

comm = rma.init()
a = comm.size - 1  # the origin; never rank 0, the owner
win = rma.Window.allocate(comm, 8, np.int64)
with win.lock_all():
    if comm.rank == a:
        win.accumulate(np.int64(1), 0, 3, op=rma.SUM)
        win.flush(0)
    if comm.rank == 0:
        snapshot = np.copy(win.local)  # loads bytes 0..63, element 3 (bytes 24..31) included
win.free()
