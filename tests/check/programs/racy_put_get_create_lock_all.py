"""racy: put-get: on a window over the caller's array, rank a puts while rank 0 gets the same element

A window from Window.create over each rank's own array. Under lock_all, rank a puts into
element 1 of rank 0 and flushes; rank 0 gets element 1 of its own window and flushes. No
barrier or message orders rank a's flush before rank 0's get: a put and a get of the same
bytes from different origins, concurrent.
"""

import numpy as np

import rma

comm = rma.init()
a = comm.size - 1  # the writer; never rank 0
mine = np.zeros(4, np.int64)
win = rma.Window.create(comm, mine)
out = np.zeros(1, np.int64)
win.lock_all()
if comm.rank == a:
    win.put(np.full(1, 7, np.int64), 0, 1)
    win.flush(0)
if comm.rank == 0:
    win.get(out, 0, 1)
    win.flush(0)
win.unlock_all()
comm.barrier()
win.free()
