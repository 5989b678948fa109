"""safe: misaligned: two origins SUM int32 pairs at bytes 0 and 4 of a byte window, one fence epoch

Rank 0's window is 16 raw bytes (uint8, displacements in bytes). In one fence epoch origin
a adds two int32 ones at byte 0 (elements at bytes 0..3 and 4..7) and origin b adds two
int32 ones at byte 4 (bytes 4..7 and 8..11). The calls overlap in bytes 4..7, which is a
whole int32 element of both, so the exception for concurrent accumulates of one op and
dtype applies: after the fence the three int32s are 1, 2, 1. Twin of
racy_misaligned_acc_fence.py, where b starts at byte 2.
"""

import numpy as np

import rma

comm = rma.init()
a, b = comm.size - 1, comm.size - 2  # two different origins; at 2 ranks b is the target itself
win = rma.Window.allocate(comm, 16, np.uint8)
win.fence()
if comm.rank == a:
    win.accumulate(np.ones(2, np.int32), 0, 0, op=rma.SUM)
if comm.rank == b:
    win.accumulate(np.ones(2, np.int32), 0, 4, op=rma.SUM)  # shares a's second element
win.fence()
if comm.rank == 0:
    assert win.local.view(np.int32)[:3].tolist() == [1, 2, 1], win.local
win.free()
