"""safe: local: another rank puts in a fence epoch; rank 0 loads win.local after the closing fence

Origin a puts 7 into element 0 of rank 0 between two fences; rank 0 loads win.local[0]
only after the second fence. That fence completes every access of the epoch at every
target before it returns, so the put is complete at rank 0 before the load: ordered, and
the load sees 7. Compare racy_local_store_put_fence.py.
"""

import numpy as np

import rma

comm = rma.init()
a = comm.size - 1  # the origin; never rank 0, the owner
win = rma.Window.allocate(comm, 8, np.int64)
win.fence()
if comm.rank == a:
    win.put(np.int64(7), 0, 0)
win.fence()
if comm.rank == 0:
    x = win.local[0]  # after the fence that closed the put's epoch
    assert x == 7, x
win.free()
