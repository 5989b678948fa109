"""racy: put-put: one origin puts twice to the same element inside one fence epoch

Puts are not ordered by MPI, even from the same origin to the same target: both transfers
may be in flight until the closing fence, which is the only completion in between. So the
two puts of the last rank to element 3 of rank 0 are concurrent and the value left there
(1 or 2) is undefined. Same-origin ordering exists only for accumulate-family calls.
"""

import numpy as np

import rma

comm = rma.init()
origin = comm.size - 1
win = rma.Window.allocate(comm, 8, np.int64)
win.fence()
if comm.rank == origin:
    win.put(np.int64(1), 0, 3)
    win.put(np.int64(2), 0, 3)  # no flush or fence since the first put
win.fence()
win.free()
