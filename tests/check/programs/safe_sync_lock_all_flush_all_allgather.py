"""safe: sync: put, flush_all, allgather, then another rank's put to the same elements

Inside lock_all, origin a puts 1 into all of rank 0's window and calls flush_all, then
every rank joins an allgather and origin b puts 2 into the same elements. flush_all
completes a's put at every target; allgather is a synchronization (every rank's
contribution happens before every rank's result), so b's put is ordered after a's.
After unlock_all and a barrier, rank 0 checks that b's values won.
"""

import numpy as np

import rma

comm = rma.init()
a, b = comm.size - 1, comm.size - 2  # two different origins; at 2 ranks b is the target itself
win = rma.Window.allocate(comm, 8, np.int64)
result = np.zeros(8, np.int64)
with win.lock_all():
    if comm.rank == a:
        win.put(np.full(8, 1, np.int64), 0)
        win.flush_all()
    comm.allgather(comm.rank)
    if comm.rank == b:
        win.put(np.full(8, 2, np.int64), 0)
comm.barrier()  # b's put completed at its unlock_all, before this barrier
if comm.rank == 0:
    with win.lock(0, rma.LOCK_SHARED):
        win.get(result, 0)
    assert (result == 2).all(), result
win.free()
