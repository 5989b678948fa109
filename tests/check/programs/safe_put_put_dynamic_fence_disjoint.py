"""safe: put-put: every rank puts to its own element of memory rank 0 attached to a dynamic window

The race-free twin of racy_put_put_dynamic_fence.py: each rank puts into element `rank` of
rank 0's attached array (its displacement plus 8 * rank bytes), so the puts of the epoch
touch disjoint bytes; rank 0 reads the array after the closing fence.
"""

import numpy as np

import rma

comm = rma.init()
win = rma.Window.create_dynamic(comm)
memory = np.zeros(comm.size, np.int64)
where = comm.bcast(win.attach(memory) if comm.rank == 0 else None)
win.fence()
win.put(np.full(1, comm.rank + 1, np.int64), 0, where + 8 * comm.rank)
win.fence()
if comm.rank == 0:
    assert memory.tolist() == list(range(1, comm.size + 1))
comm.barrier()
if comm.rank == 0:
    win.detach(memory)
win.free()
