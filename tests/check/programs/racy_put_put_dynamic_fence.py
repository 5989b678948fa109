"""racy: put-put: every rank puts to the same bytes of memory rank 0 attached to a dynamic window

Rank 0 attaches an array to a window from Window.create_dynamic and hands its displacement to
the others with a bcast. In one fence epoch every rank puts its rank into the array's first
element: puts from different origins to the same bytes, with nothing between them but the
closing fence, which completes them all at once.
"""

import numpy as np

import rma

comm = rma.init()
win = rma.Window.create_dynamic(comm)
memory = np.zeros(4, np.int64)
where = comm.bcast(win.attach(memory) if comm.rank == 0 else None)
win.fence()
win.put(np.full(1, comm.rank, np.int64), 0, where)  # every rank, the same 8 bytes of rank 0
win.fence()
comm.barrier()
if comm.rank == 0:
    win.detach(memory)
win.free()
