"""safe: misaligned: two origins BOR int64s at bytes 0 and 8 of a byte window, one PSCW epoch

Rank 0's window is 16 raw bytes (uint8, displacements in bytes) and exposed to origins a
and b in one post/wait epoch. Origin a combines two int64s with BOR at byte 0 (elements at
bytes 0..7 and 8..15) and origin b one int64 with BOR at byte 8 (bytes 8..15), which is
a's second element exactly. Same op, same dtype, same element: the concurrent accumulates
are atomic per element and the result is as if in some order, 1 and 2 | 4 = 6. Twin of
racy_misaligned_acc_pscw.py, where b starts at byte 4.
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
        win.accumulate(np.array([4], np.int64), 0, 8, op=rma.BOR)  # a's second element
if comm.rank == 0:
    win.wait()
    assert win.local.view(np.int64).tolist() == [1, 6], win.local
win.free()
