"""safe: misaligned: one origin SUMs int32s at bytes 0 and 1 of a byte window, one fence epoch

Rank 0's window is 16 raw bytes (uint8, displacements in bytes). In one fence epoch a
single origin adds an int32 one at byte 0 (bytes 0..3) and another at byte 1 (bytes
1..4). The two overlap without matching elements, which would conflict from two origins,
but accumulates from one origin to one target are ordered by MPI's default
accumulate_ordering (rar, raw, war, waw), which covers the same or overlapping locations:
the second applies after the first, and bytes 0..4 are 1, 1, 0, 0, 0 (little-endian). Compare
racy_misaligned_acc_fence.py, where two origins do this.
"""

import numpy as np

import rma

comm = rma.init()
origin = comm.size - 1
win = rma.Window.allocate(comm, 16, np.uint8)
win.fence()
if comm.rank == origin:
    win.accumulate(np.ones(1, np.int32), 0, 0, op=rma.SUM)
    win.accumulate(np.ones(1, np.int32), 0, 1, op=rma.SUM)  # ordered after the first
win.fence()
if comm.rank == 0:
    assert win.local[:5].tolist() == [1, 1, 0, 0, 0], win.local
win.free()
