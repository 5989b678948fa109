"""racy: get-acc: get_accumulate SUM flushed, but never synchronized with another rank's get

Inside lock_all, origin a does get_accumulate(SUM) on elements 0..1 of rank 0 and
flush(0), which completes it at the target; origin b gets element 1 and flushes. A flush
orders nothing with other ranks by itself: without a barrier or message between a's flush
and b's get, the update and the read are concurrent.
"""

import numpy as np

import rma

comm = rma.init()
a, b = comm.size - 1, comm.size - 2  # two different origins; at 2 ranks b is the target itself
win = rma.Window.allocate(comm, 8, np.int64)
old, seen = np.zeros(2, np.int64), np.zeros(1, np.int64)
with win.lock_all():
    if comm.rank == a:
        win.get_accumulate(np.ones(2, np.int64), old, 0, 0, op=rma.SUM)
        win.flush(0)
    if comm.rank == b:
        win.get(seen, 0, 1)
        win.flush(0)
win.free()
