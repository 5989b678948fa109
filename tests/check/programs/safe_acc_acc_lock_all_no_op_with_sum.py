"""safe: acc-acc: fetch_and_op NO_OP alongside SUM accumulates to one element

Inside lock_all, the last rank reads element 0 of rank 0 with fetch_and_op(NO_OP) while
every other rank adds 1 to it with accumulate(SUM). The ops differ, but NO_OP is the
exception: an accumulate-family read is atomic with respect to the concurrent same-dtype
updates, so it sees some value between 0 and size-1 and nothing conflicts.
"""

import numpy as np

import rma

comm = rma.init()
reader = comm.size - 1
win = rma.Window.allocate(comm, 8, np.int64)
seen = np.full(1, -1, np.int64)
with win.lock_all():
    if comm.rank == reader:
        win.fetch_and_op(np.int64(0), seen, 0, 0, op=rma.NO_OP)
    else:
        win.accumulate(np.int64(1), 0, 0, op=rma.SUM)
if comm.rank == reader:
    assert 0 <= seen[0] <= comm.size - 1, seen
win.free()
