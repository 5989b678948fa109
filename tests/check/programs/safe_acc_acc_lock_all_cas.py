"""safe: acc-acc: every rank tries to claim one word with compare_and_swap

Inside lock_all, every rank does compare_and_swap(rank+1, compare=0) on element 0 of
rank 0, the way a lock word is claimed. Concurrent compare_and_swap calls on one
location are atomic with respect to each other (that is their purpose), so this is not
a conflict: exactly one rank sees the old value 0.
"""

import numpy as np

import rma

comm = rma.init()
win = rma.Window.allocate(comm, 8, np.int64)
old = np.zeros(1, np.int64)
with win.lock_all():
    win.compare_and_swap(np.int64(comm.rank + 1), np.int64(0), old, 0, 0)
olds = comm.allgather(int(old[0]))
assert olds.count(0) == 1, olds
win.free()
