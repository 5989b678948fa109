"""racy: put-get: put, flush_local, then get of the same element in one exclusive lock epoch

flush_local only completes the put at the origin (its buffer may be reused); it says
nothing about the target. The following get from the same origin to the same element is
therefore not ordered after the put: they are concurrent and the get may see the old value.
flush(0) instead of flush_local(0) would make this program correct.
"""

import numpy as np

import rma

comm = rma.init()
origin = comm.size - 1
win = rma.Window.allocate(comm, 8, np.int64)
result = np.zeros(1, np.int64)
if comm.rank == origin:
    with win.lock(0, rma.LOCK_EXCLUSIVE):
        win.put(np.int64(7), 0, 2)
        win.flush_local(0)  # local completion only
        win.get(result, 0, 2)
win.free()
