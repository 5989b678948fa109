"""safe: sync: a put and a get of one element in two consecutive PSCW epochs

Epoch 1: rank 0 posts to origin a, which puts 7 into element 0; rank 0 waits. Epoch 2:
rank 0 posts to origin b, which gets element 0. a's complete happens before rank 0's
wait returns, which happens before rank 0's next post, which happens before b's start
can let b's get reach rank 0. So the put is complete at the target before the get:
ordered, not concurrent. With 2 ranks b is rank 0 starting an epoch to itself.
"""

import numpy as np

import rma

comm = rma.init()
a, b = comm.size - 1, comm.size - 2  # two different origins; at 2 ranks b is the target itself
win = rma.Window.allocate(comm, 8, np.int64)
seen = np.zeros(1, np.int64)
for origin in (a, b):
    if comm.rank == 0:
        win.post([origin])
    if comm.rank == origin:
        with win.start([0]):
            if origin == a:
                win.put(np.int64(7), 0, 0)
            else:
                win.get(seen, 0, 0)
    if comm.rank == 0:
        win.wait()
if comm.rank == b:
    assert seen[0] == 7, seen
win.free()
