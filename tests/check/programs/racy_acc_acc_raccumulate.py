"""racy: acc-acc: raccumulate SUM and raccumulate BXOR from two origins to one element

Inside lock_all, origin a raccumulates with SUM and origin b with BXOR into element 4 of
rank 0. Waiting on the requests gives local completion only, and nothing orders the two
origins. Different ops on the same location from different origins conflict.
"""

import numpy as np

import rma

comm = rma.init()
a, b = comm.size - 1, comm.size - 2  # two different origins; at 2 ranks b is the target itself
win = rma.Window.allocate(comm, 8, np.int64)
with win.lock_all():
    if comm.rank == a:
        win.raccumulate(np.int64(3), 0, 4, op=rma.SUM).wait()
    if comm.rank == b:
        win.raccumulate(np.int64(5), 0, 4, op=rma.BXOR).wait()
win.free()
