"""racy: buffer: a get_accumulate whose origin and result are the same array

Inside lock_all, origin a calls get_accumulate(buf, buf, 0, 2): buf is both the data to
add to elements 2..3 of rank 0 and the array that receives their old values. The call
reads its origin and writes its result at times the library chooses, so the values added
may already be the fetched ones. MPI requires the origin and result buffers of
get_accumulate (like fetch_and_op and compare_and_swap) to be disjoint.
"""

import numpy as np

import rma

comm = rma.init()
a = comm.size - 1  # the origin; rank 0 is the target
win = rma.Window.allocate(comm, 8, np.int64)
with win.lock_all():
    if comm.rank == a:
        buf = np.array([5, 6], np.int64)
        win.get_accumulate(buf, buf, 0, 2, op=rma.SUM)  # one array as origin and result
        win.flush(0)
win.free()
