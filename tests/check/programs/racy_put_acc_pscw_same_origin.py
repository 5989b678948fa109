"""racy: put-acc: one origin puts and then accumulates to the same element in one access epoch

The last rank puts 5 into element 1 of rank 0 and then accumulates 1 into it, in the same
start/complete epoch. MPI orders accumulate-family calls of one origin among themselves,
but a put and an accumulate are not ordered: both complete only at complete(), so they are
concurrent and conflicting even though they come from the same origin.
"""

import numpy as np

import rma

comm = rma.init()
origin = comm.size - 1
win = rma.Window.allocate(comm, 8, np.int64)
if comm.rank == 0:
    win.post([origin])
if comm.rank == origin:
    with win.start([0]):
        win.put(np.int64(5), 0, 1)
        win.accumulate(np.int64(1), 0, 1, op=rma.SUM)  # no completion since the put
if comm.rank == 0:
    win.wait()
win.free()
