"""safe: local: rank a stores into rank 0's memory through win.shared(0), then a barrier, then rank 0 reads

The race-free twin of racy_local_store_shared_peer_no_barrier.py: rank a's store to rank 0's
element 2 through win.shared(0), and win.sync() (so that, on a machine with a separate
memory model, the store is visible), happen before a barrier; rank 0 loads its element 2
after the same barrier (and its own win.sync()). The barrier orders the store before the load.
"""

import numpy as np

import rma

comm = rma.init()
a = comm.size - 1  # the writer; never rank 0, the owner
win = rma.Window.allocate_shared(comm, 4, np.int64)
win.lock_all()  # (win.sync() belongs to a passive-target epoch)
if comm.rank == a:
    win.shared(0)[2] = 5  # a store to rank 0's element 2
    win.sync()
comm.barrier()
if comm.rank == 0:
    win.sync()
    assert int(win.local[2]) == 5
    assert int(win.shared(a)[0]) == 0  # a load of rank a's memory no one writes
win.unlock_all()
win.free()
