"""safe: sync: a put under an exclusive lock and a get under a shared lock of the same target

Origin a puts 42 into element 0 of rank 0 holding LOCK_EXCLUSIVE; origin b gets element 0
holding LOCK_SHARED. An exclusive lock excludes shared locks too, so one epoch ends (its
unlock completing its access at the target) before the other begins. Which one goes first
is up to timing, but in every execution the two accesses are ordered: b sees 0 or 42.
"""

import numpy as np

import rma

comm = rma.init()
a, b = comm.size - 1, comm.size - 2  # two different origins; at 2 ranks b is the target itself
win = rma.Window.allocate(comm, 8, np.int64)
result = np.full(1, -1, np.int64)
if comm.rank == a:
    with win.lock(0, rma.LOCK_EXCLUSIVE):
        win.put(np.int64(42), 0, 0)
if comm.rank == b:
    with win.lock(0, rma.LOCK_SHARED):
        win.get(result, 0, 0)
    assert result[0] in (0, 42), result
win.free()
