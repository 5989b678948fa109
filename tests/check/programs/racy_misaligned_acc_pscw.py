"""racy: misaligned: two origins BOR int64s at bytes 0 and 4 of a byte window, one PSCW epoch

Rank 0's window is 16 raw bytes (uint8, displacements in bytes) and exposed to origins a
and b in one post/wait epoch. Origin a combines two int64s with BOR at byte 0 (elements at
bytes 0..7 and 8..15) and origin b one int64 with BOR at byte 4 (bytes 4..11). Same op and
dtype, but b's element straddles a's two: the overlap matches no element of a, so the
exception for concurrent accumulates does not cover it. Both access epochs match the same
post and neither complete happens before the other's call. At 2 ranks b is rank 0.
"""

import numpy as np

import rma

comm = rma.init()
a, b = comm.size - 1, comm.size - 2  # two different origins; at 2 ranks b is the target itself
win = rma.Window.allocate(comm, 16, np.uint8)
if comm.rank == 0:
    win.post([a, b])
if comm.rank == a:
    with win.start([0]):
        win.accumulate(np.array([1, 2], np.int64), 0, 0, op=rma.BOR)
if comm.rank == b:
    with win.start([0]):
        win.accumulate(np.array([4], np.int64), 0, 4, op=rma.BOR)  # straddles a's two elements
if comm.rank == 0:
    win.wait()
win.free()
