"""racy: misaligned: fetch_and_op SUM at byte 0 and NO_OP at byte 2 of a byte window, inside lock_all

Rank 0's window is 16 raw bytes (uint8, displacements in bytes). Inside lock_all, origin
a adds 1 to the int32 at bytes 0..3 with fetch_and_op(SUM) while origin b reads the int32
at bytes 2..5 with fetch_and_op(NO_OP). A NO_OP read is atomic with respect to concurrent
same-dtype accumulates only element by element; these two int32s share bytes 2..3 without
being the same element, so b's read and a's update of those bytes are concurrent and
conflicting. Nothing orders them: the shared locks of lock_all do not exclude each other.
"""

import numpy as np

import rma

comm = rma.init()
a, b = comm.size - 1, comm.size - 2  # two different origins; at 2 ranks b is the target itself
win = rma.Window.allocate(comm, 16, np.uint8)
old = np.full(1, -1, np.int32)
with win.lock_all():
    if comm.rank == a:
        win.fetch_and_op(np.ones(1, np.int32), old, 0, 0, op=rma.SUM)
    if comm.rank == b:
        win.fetch_and_op(np.zeros(1, np.int32), old, 0, 2, op=rma.NO_OP)  # bytes 2..5
win.free()
