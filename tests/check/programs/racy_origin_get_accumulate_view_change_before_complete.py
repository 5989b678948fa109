"""racy: origin: a get_accumulate's origin is a view of an array that is changed before complete

Rank 0 posts an exposure epoch for origin a. Origin a starts an access epoch to rank 0 and
calls get_accumulate with origin data[::2] (elements 0, 2, 4, 6 of data = 0..7), adding
them into elements 0..3 of rank 0; then it stores data[2] = 9, which is element 1 of the
origin view, and only then calls complete. The origin array is changed through another
name for the same memory before the call that completes the get_accumulate at the origin.
"""

import numpy as np

import rma

comm = rma.init()
a = comm.size - 1  # the origin; rank 0 is the target
win = rma.Window.allocate(comm, 8, np.int64)
if comm.rank == 0:
    win.post([a])
if comm.rank == a:
    data = np.arange(8, dtype=np.int64)
    old = np.zeros(4, np.int64)
    win.start([0])
    win.get_accumulate(data[::2], old, 0, 0, op=rma.SUM)
    data[2] = 9  # changes data[::2][1], which the call may still read
    win.complete()
if comm.rank == 0:
    win.wait()
win.free()
