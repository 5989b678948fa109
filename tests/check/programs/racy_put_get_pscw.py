"""racy: put-get: two origins of one PSCW exposure epoch put and get the same element

Rank 0 exposes its window to origins a and b in one post/wait epoch. Origin a puts into
element 4 while origin b gets element 4. Both access epochs match the same post, and
neither origin's complete happens before the other's call, so the put and the get are
concurrent. With 2 ranks b is rank 0, starting an access epoch to itself.
"""

import numpy as np

import rma

comm = rma.init()
a, b = comm.size - 1, comm.size - 2  # two different origins; at 2 ranks b is the target itself
win = rma.Window.allocate(comm, 8, np.int64)
result = np.zeros(1, np.int64)
if comm.rank == 0:
    win.post([a, b])
if comm.rank == a:
    with win.start([0]):
        win.put(np.int64(9), 0, 4)
if comm.rank == b:
    with win.start([0]):
        win.get(result, 0, 4)
if comm.rank == 0:
    win.wait()
win.free()
