"""racy: read: the maximum of a get's result is taken before flush_local(0) completes the get

Under an exclusive lock on rank 0, origin a gets elements 4..7 into value and calls
value.max() before flush_local(0). flush_local is the call that completes the get at the
origin (the data is in value when it returns); before it, value may hold any mix of its
initial -1s and the fetched 0s.
"""

import numpy as np

import rma

comm = rma.init()
a = comm.size - 1  # the origin; rank 0 is the target
win = rma.Window.allocate(comm, 8, np.int64)
if comm.rank == a:
    value = np.full(4, -1, np.int64)
    with win.lock(0, rma.LOCK_EXCLUSIVE):
        win.get(value, 0, 4)
        biggest = value.max()  # too early: before flush_local
        win.flush_local(0)
win.free()
