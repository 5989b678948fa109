"""safe: result: the result arrays of a get and a compare_and_swap are changed after their completion

Inside lock_all, origin a gets elements 0..3 of rank 0 into out, calls flush_local(0), which
completes the get at the origin (the data is in out), and then overwrites out. It then
compare_and_swaps element 5 into old, completes it with flush(0), and changes old. Reading or
changing a result array after the call that completes it is what MPI allows.
"""

import numpy as np

import rma

comm = rma.init()
a = comm.size - 1  # the origin; rank 0 is the target
win = rma.Window.allocate(comm, 8, np.int64)
with win.lock_all():
    if comm.rank == a:
        out = np.zeros(4, np.int64)
        win.get(out, 0, 0)
        win.flush_local(0)
        assert out.tolist() == [0, 0, 0, 0]
        out[:] = 3
        old = np.zeros(1, np.int64)
        win.compare_and_swap(np.ones(1, np.int64), np.zeros(1, np.int64), old, 0, 5)
        win.flush(0)
        old[0] += 1
win.free()
