"""racy: acc-acc: same op, different dtypes (int32 vs int64) on overlapping bytes

Rank 0's window is 16 raw bytes (uint8), which accepts origins of any dtype. Origin a
accumulates an int32 with SUM at byte 0 (bytes 0..3) and origin b accumulates an int64
with SUM at byte 0 (bytes 0..7), in one fence epoch. The op is the same but the basic
datatypes differ, so MPI's exception for concurrent accumulates does not apply: the
accumulates on bytes 0..3 are concurrent and conflicting.
"""

import numpy as np

import rma

comm = rma.init()
a, b = comm.size - 1, comm.size - 2  # two different origins; at 2 ranks b is the target itself
win = rma.Window.allocate(comm, 16, np.uint8)
win.fence()
if comm.rank == a:
    win.accumulate(np.int32(1), 0, 0, op=rma.SUM)
if comm.rank == b:
    win.accumulate(np.int64(1), 0, 0, op=rma.SUM)
win.fence()
win.free()
