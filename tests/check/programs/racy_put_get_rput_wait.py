"""racy: put-get: rput and req.wait(), barrier, then another rank's rget of the same element

Inside lock_all, origin a issues rput to element 2 of rank 0 and waits on the request;
then all ranks meet at a barrier and origin b issues rget of element 2. Request.wait() of
an rput means local completion only (the origin buffer is free again), not completion at
the target, which comes at a's unlock_all after the barrier. The put and the get are
concurrent.
"""

import numpy as np

import rma

comm = rma.init()
a, b = comm.size - 1, comm.size - 2  # two different origins; at 2 ranks b is the target itself
win = rma.Window.allocate(comm, 8, np.int64)
result = np.zeros(1, np.int64)
with win.lock_all():
    if comm.rank == a:
        win.rput(np.int64(7), 0, 2).wait()  # local completion only
    comm.barrier()
    if comm.rank == b:
        win.rget(result, 0, 2).wait()
win.free()
