"""racy: misaligned: two origins SUM int32 pairs at bytes 0 and 2 of a byte window, one fence epoch

Rank 0's window is 16 raw bytes (uint8, displacements in bytes), which accepts origins of
any dtype. In one fence epoch origin a adds two int32 ones at byte 0 (elements at bytes
0..3 and 4..7) and origin b adds two int32 ones at byte 2 (bytes 2..5 and 6..9). Same op,
same dtype, but the overlap (bytes 2..7) matches no element of the other call: MPI's
exception for concurrent accumulates makes them atomic per element of the basic datatype,
and no element here is common to both, so the updates of bytes 2..7 are concurrent and
conflicting (an int32 add with a carry into byte 3 may be lost).
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
    win.accumulate(np.ones(2, np.int32), 0, 2, op=rma.SUM)  # half an element off a's
win.fence()
win.free()
