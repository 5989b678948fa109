"""safe: acc-acc: one origin applies SUM, MAX, then fetch_and_op PROD to one element, one epoch

Different ops on the same location would conflict if they came from different origins.
From the same origin to the same target, MPI's default accumulate_ordering (rar, raw, war,
waw) orders accumulate-family calls, so they are not concurrent: 0 + 3 = 3, max(3, 2) = 3,
3 * 4 = 12. The value is checked by a get in the next fence epoch.
"""

import numpy as np

import rma

comm = rma.init()
origin = comm.size - 1
win = rma.Window.allocate(comm, 8, np.int64)
old, result = np.zeros(1, np.int64), np.zeros(1, np.int64)
win.fence()
if comm.rank == origin:
    win.accumulate(np.int64(3), 0, 1, op=rma.SUM)
    win.accumulate(np.int64(2), 0, 1, op=rma.MAX)
    win.fetch_and_op(np.int64(4), old, 0, 1, op=rma.PROD)
win.fence()
if comm.rank == origin:
    assert old[0] == 3, old
    win.get(result, 0, 1)
win.fence()
if comm.rank == origin:
    assert result[0] == 12, result
win.free()
