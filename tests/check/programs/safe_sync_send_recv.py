"""safe: sync: put and unlock, then send; recv, then get of the same element

Origin a puts 7 into element 0 of rank 0 under a shared lock, unlocks (completing the put
at the target) and sends a message to origin b. Origin b receives it and only then gets
element 0 under a shared lock. unlock -> send -> recv -> get orders the two accesses.
Compare racy_put_get_send_before_put.py.
"""

import numpy as np

import rma

comm = rma.init()
a, b = comm.size - 1, comm.size - 2  # two different origins; at 2 ranks b is the target itself
win = rma.Window.allocate(comm, 8, np.int64)
result = np.zeros(1, np.int64)
if comm.rank == a:
    with win.lock(0, rma.LOCK_SHARED):
        win.put(np.int64(7), 0, 0)
    comm.send("done", b)
if comm.rank == b:
    comm.recv(a)
    with win.lock(0, rma.LOCK_SHARED):
        win.get(result, 0, 0)
    assert result[0] == 7, result
win.free()
