"""safe: local: another rank puts, flushes and sends; rank 0 receives, then prints win.local

Inside lock_all, origin a puts [1, 2] into elements 2..3 of rank 0, calls flush(0) (the
put is complete at rank 0) and then sends a message to rank 0. Rank 0 receives it and
only then prints win.local, a load of every element. put -> flush -> send -> recv -> load
orders the put before the load; no other rank touches the window.
"""

import numpy as np

import rma

comm = rma.init()
a = comm.size - 1  # the origin; never rank 0, the owner
win = rma.Window.allocate(comm, 8, np.int64)
with win.lock_all():
    if comm.rank == a:
        win.put(np.array([1, 2], np.int64), 0, 2)
        win.flush(0)
        comm.send("flushed", 0)
    if comm.rank == 0:
        comm.recv(a)
        print(win.local)  # loads bytes 0..63, after the put completed
        assert win.local.tolist() == [0, 0, 1, 2, 0, 0, 0, 0]
win.free()
