"""racy: put-put: barriers before and after, but not between, two ranks' puts

Every rank calls barrier, then puts its rank into element 0 of rank 0 under a shared
lock, unlocks, and calls barrier again. Each put completes at its unlock, but both puts
sit between the same two barriers: no barrier separates one rank's unlock from another
rank's put, so the puts are concurrent. A barrier only orders what comes before it on
one rank with what comes after it on another.
"""

import numpy as np

import rma

comm = rma.init()
win = rma.Window.allocate(comm, 8, np.int64)
comm.barrier()
with win.lock(0, rma.LOCK_SHARED):
    win.put(np.int64(comm.rank), 0, 0)
comm.barrier()
win.free()
