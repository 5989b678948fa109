"""racy: put-acc: compare_and_swap and a put to the same element inside lock_all

Origin a does compare_and_swap on element 0 of rank 0 (an accumulate-family call) while
origin b puts into element 0, both inside lock_all with nothing ordering them. A put is
not atomic with respect to compare_and_swap, so the two accesses conflict.
"""

import numpy as np

import rma

comm = rma.init()
a, b = comm.size - 1, comm.size - 2  # two different origins; at 2 ranks b is the target itself
win = rma.Window.allocate(comm, 8, np.int64)
old = np.zeros(1, np.int64)
with win.lock_all():
    if comm.rank == a:
        win.compare_and_swap(np.int64(1), np.int64(0), old, 0, 0)
    if comm.rank == b:
        win.put(np.int64(5), 0, 0)
win.free()
