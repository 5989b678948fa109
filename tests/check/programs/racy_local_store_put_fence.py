"""racy: local: rank 0 stores into win.local[0] in the fence epoch in which another rank puts there

Between the same two fences, origin a puts 7 into element 0 of rank 0 while rank 0 itself
stores 5 into win.local[0] (bytes 0..7). The put is complete at rank 0 only at the closing
fence, and nothing orders rank 0's store before or after it: a put and a local store to
the same bytes are concurrent, and the element may end up 5, 7 or a mix of the two.
"""

import numpy as np

import rma

comm = rma.init()
a = comm.size - 1  # the origin; never rank 0, the owner
win = rma.Window.allocate(comm, 8, np.int64)
win.fence()
if comm.rank == a:
    win.put(np.int64(7), 0, 0)
if comm.rank == 0:
    win.local[0] = 5  # a store that the put may overwrite, or be overwritten by
win.fence()
win.free()
