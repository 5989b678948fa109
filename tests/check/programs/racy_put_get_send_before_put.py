"""racy: put-get: the message is sent before the put, so it orders nothing

Origin a sends a message to origin b and only then puts into element 0 of rank 0 under a
shared lock. Origin b receives the message and then gets element 0 under a shared lock.
The send -> recv edge orders a's calls before the send with b's calls after the recv, but
a's put comes after its send: the put and the get are concurrent.
"""

import numpy as np

import rma

comm = rma.init()
a, b = comm.size - 1, comm.size - 2  # two different origins; at 2 ranks b is the target itself
win = rma.Window.allocate(comm, 8, np.int64)
result = np.zeros(1, np.int64)
if comm.rank == a:
    comm.send("go", b)
    with win.lock(0, rma.LOCK_SHARED):
        win.put(np.int64(7), 0, 0)
if comm.rank == b:
    comm.recv(a)
    with win.lock(0, rma.LOCK_SHARED):
        win.get(result, 0, 0)
win.free()
