"""racy: put-acc: a put and an accumulate with REPLACE to the same element under shared locks

accumulate(op=REPLACE) writes like a put but is an accumulate-family call, atomic only
with respect to other accumulates. Origin a does the REPLACE accumulate and origin b a
plain put to element 3 of rank 0, under concurrent shared locks: a put and an
accumulate on the same bytes conflict, whatever the op.
"""

import numpy as np

import rma

comm = rma.init()
a, b = comm.size - 1, comm.size - 2  # two different origins; at 2 ranks b is the target itself
win = rma.Window.allocate(comm, 8, np.int64)
if comm.rank == a:
    with win.lock(0, rma.LOCK_SHARED):
        win.accumulate(np.int64(1), 0, 3, op=rma.REPLACE)
if comm.rank == b:
    with win.lock(0, rma.LOCK_SHARED):
        win.put(np.int64(2), 0, 3)
win.free()
