"""racy: put-put: every rank puts to element 0 of rank 0 under a shared lock

Shared locks may be held by several ranks at once and do not order each other's epochs.
Every rank locks rank 0 with LOCK_SHARED and puts its rank into element 0; no
synchronization between the ranks separates one unlock from another rank's put, so at
least two puts to the same bytes are concurrent in every execution.
"""

import numpy as np

import rma

comm = rma.init()
win = rma.Window.allocate(comm, 8, np.int64)
with win.lock(0, rma.LOCK_SHARED):
    win.put(np.int64(comm.rank), 0, 0)
win.free()
