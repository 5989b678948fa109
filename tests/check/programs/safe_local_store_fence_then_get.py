"""safe: local: rank 0 stores into win.local in one fence epoch; another rank gets it in the next

In fence epoch 1 no rank calls RMA and rank 0 stores 40 into win.local[4]. In fence epoch 2
origin a gets element 4 of rank 0. The fence between them happens after rank 0's store
(program order) and before a's get (a fence returns only when every rank has called it),
so the store and the get are ordered and the get reads 40. A store and a get of the same
bytes conflict only within one epoch; compare racy_local_store_get_fence_view.py.
"""

import numpy as np

import rma

comm = rma.init()
a = comm.size - 1  # the origin; never rank 0, the owner
win = rma.Window.allocate(comm, 8, np.int64)
result = np.zeros(1, np.int64)
win.fence()
if comm.rank == 0:
    win.local[4] = 40  # before the fence that opens the get's epoch
win.fence()
if comm.rank == a:
    win.get(result, 0, 4)
win.fence()
if comm.rank == a:
    assert result[0] == 40, result
win.free()
