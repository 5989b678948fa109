"""racy: put-put: every rank puts its rank into element 0 of rank 0 in one fence epoch

All puts are issued between the same two fences, and within one fence epoch every
pair of accesses from any ranks is concurrent: nothing completes before the closing
fence. At least two ranks exist, so at least two puts write the same 8 bytes of rank 0
concurrently (with 2 ranks, rank 0's put is a self-access). The final value is undefined.
"""

import numpy as np

import rma

comm = rma.init()
win = rma.Window.allocate(comm, 8, np.int64)
win.fence()
win.put(np.int64(comm.rank), 0, 0)
win.fence()
win.free()
