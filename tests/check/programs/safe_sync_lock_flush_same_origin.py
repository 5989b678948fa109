"""safe: sync: same-origin put; flush; put; flush; get to one element in one lock epoch

The last rank writes element 2 of rank 0 twice and reads it back, with flush(0) between
each call. flush(0) completes every earlier access of this origin at the target, so each
access is ordered after the previous one: no two are concurrent, and the get sees 2.
"""

import numpy as np

import rma

comm = rma.init()
origin = comm.size - 1
win = rma.Window.allocate(comm, 8, np.int64)
result = np.zeros(1, np.int64)
if comm.rank == origin:
    with win.lock(0, rma.LOCK_EXCLUSIVE):
        win.put(np.int64(1), 0, 2)
        win.flush(0)
        win.put(np.int64(2), 0, 2)
        win.flush(0)
        win.get(result, 0, 2)
    assert result[0] == 2, result
win.free()
