"""racy: get-acc: a SUM accumulate and a get of the same element under shared locks

Origin a accumulates into element 5 of rank 0 and origin b gets element 5, each under its
own LOCK_SHARED epoch. Shared locks do not exclude each other and nothing else orders the
two epochs, so the get (not atomic) is concurrent with the updating accumulate.
"""

import numpy as np

import rma

comm = rma.init()
a, b = comm.size - 1, comm.size - 2  # two different origins; at 2 ranks b is the target itself
win = rma.Window.allocate(comm, 8, np.int64)
result = np.zeros(1, np.int64)
if comm.rank == a:
    with win.lock(0, rma.LOCK_SHARED):
        win.accumulate(np.int64(4), 0, 5, op=rma.SUM)
if comm.rank == b:
    with win.lock(0, rma.LOCK_SHARED):
        win.get(result, 0, 5)
win.free()
