"""safe: misaligned: fetch_and_op SUM at byte 0, flush, barrier, then NO_OP at byte 2, inside lock_all

Rank 0's window is 16 raw bytes (uint8, displacements in bytes). Inside lock_all, origin
a adds 1 to the int32 at bytes 0..3 with fetch_and_op(SUM) and calls flush(0), which
completes it at rank 0; then every rank enters a barrier, and only after it origin b reads
the int32 at bytes 2..5 with fetch_and_op(NO_OP). The two calls share bytes 2..3 without
sharing an element, but the flush and the barrier order them, so they are not concurrent.
Twin of racy_misaligned_fetch_and_op_lock_all.py, which has no flush or barrier.
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
        win.flush(0)  # complete at rank 0, before the barrier
    comm.barrier()
    if comm.rank == b:
        win.fetch_and_op(np.zeros(1, np.int32), old, 0, 2, op=rma.NO_OP)  # bytes 2..5
        win.flush(0)
        expected = np.array([1, 0, 0, 0, 0, 0], np.uint8)[2:].view(np.int32)[0]
        assert old[0] == expected, old
win.free()
