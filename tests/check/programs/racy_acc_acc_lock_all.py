"""racy: acc-acc: fetch_and_op SUM and accumulate MAX on one element inside lock_all

Origin a adds 1 to element 6 of rank 0 with fetch_and_op(SUM) and origin b updates
element 6 with accumulate(MAX), both inside lock_all, unordered. Concurrent accumulates
to one location must use the same op (NO_OP aside); SUM and MAX differ, so this conflicts.
"""

import numpy as np

import rma

comm = rma.init()
a, b = comm.size - 1, comm.size - 2  # two different origins; at 2 ranks b is the target itself
win = rma.Window.allocate(comm, 8, np.int64)
old = np.zeros(1, np.int64)
with win.lock_all():
    if comm.rank == a:
        win.fetch_and_op(np.int64(1), old, 0, 6, op=rma.SUM)
    if comm.rank == b:
        win.accumulate(np.int64(9), 0, 6, op=rma.MAX)
win.free()
