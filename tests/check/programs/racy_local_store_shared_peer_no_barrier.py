"""racy: local: rank a stores into rank 0's memory through win.shared(0) while rank 0 reads it

A window from Window.allocate_shared: every rank of the host can load and store every rank's
memory directly. Rank a (the last rank) writes 5 into rank 0's element 2 through
win.shared(0); rank 0 reads its element 2 through win.local. Nothing between the two orders
them (the barrier comes after both), so the load and the store of the same bytes are
concurrent, exactly as a put and a get would be.
"""

import numpy as np

import rma

comm = rma.init()
a = comm.size - 1  # the writer; never rank 0, the owner
win = rma.Window.allocate_shared(comm, 4, np.int64)
if comm.rank == a:
    win.shared(0)[2] = 5  # a store to rank 0's element 2
if comm.rank == 0:
    seen = int(win.local[2])  # a load of the same bytes, not ordered after the store
comm.barrier()
win.free()
