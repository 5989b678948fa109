"""safe: sync: conflicting accesses from two origins separated by fences

Epoch 1: origin a puts 1 into element 0 of rank 0. Epoch 2: origin b gets element 0.
Epoch 3: origin b puts 2 into it. Epoch 4: origin a accumulates MAX into it. Every pair
(put-get, get-put, put-acc) would conflict within one epoch, but each access is in its own
fence epoch: a fence completes all accesses of the epoch before it at every target and
happens before every access of the next epoch.
"""

import numpy as np

import rma

comm = rma.init()
a, b = comm.size - 1, comm.size - 2  # two different origins; at 2 ranks b is the target itself
win = rma.Window.allocate(comm, 8, np.int64)
seen = np.zeros(1, np.int64)
win.fence()
if comm.rank == a:
    win.put(np.int64(1), 0, 0)
win.fence()
if comm.rank == b:
    win.get(seen, 0, 0)
win.fence()
if comm.rank == b:
    assert seen[0] == 1, seen
    win.put(np.int64(2), 0, 0)
win.fence()
if comm.rank == a:
    win.accumulate(np.int64(5), 0, 0, op=rma.MAX)
win.fence()
win.free()
