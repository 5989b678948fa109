"""safe: local: rank 0 loads win.local while other ranks get the same elements under lock_all

Rank 0 fills win.local[:] = 1..8 before a barrier, outside any epoch; every rank then opens
lock_all, and each rank other than 0 gets elements 0..3 of rank 0 while rank 0 sums
win.local[0:4]. The loads and the gets are concurrent and read the same bytes, but a load
counts as a get, and reads never conflict with reads. The initial store is ordered before
the gets by the barrier, which every rank passes after it and before its lock_all.
"""

import numpy as np

import rma

comm = rma.init()
win = rma.Window.allocate(comm, 8, np.int64)
result = np.zeros(4, np.int64)
if comm.rank == 0:
    win.local[:] = np.arange(1, 9)  # stores, before the barrier
comm.barrier()
with win.lock_all():
    if comm.rank != 0:
        win.get(result, 0, target=np.s_[0:4])
        win.flush(0)
        assert result.tolist() == [1, 2, 3, 4], result
    if comm.rank == 0:
        total = win.local[0:4].sum()  # loads of the bytes being got
        assert total == 10, total
win.free()
