"""racy: put-put: every rank puts to element 0 of rank 0 inside lock_all

lock_all takes a shared lock on every rank; shared locks do not order each other. Every
rank puts its rank into element 0 of rank 0 with no flush-and-synchronize between them,
so at least two puts to the same bytes are concurrent in every execution.
"""

import numpy as np

import rma

comm = rma.init()
win = rma.Window.allocate(comm, 8, np.int64)
with win.lock_all():
    win.put(np.int64(comm.rank), 0, 0)
win.free()
