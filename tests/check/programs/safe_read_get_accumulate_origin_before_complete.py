"""safe: read: a get_accumulate's origin array is read before complete; only its result is off limits

Rank 0 exposes its window to origin a with post. Origin a starts an access epoch to rank 0,
calls get_accumulate(data, old, 0, 0) and, before complete, reads data (data.sum()) but not
old. The origin array of a pending call may be read (spec/002 forbids only updating it;
two concurrent reads are fine), while the result array may be neither read nor written.
After complete old holds the zeros that were in the window.
"""

import numpy as np

import rma

comm = rma.init()
a = comm.size - 1  # the origin; rank 0 is the target
win = rma.Window.allocate(comm, 8, np.int64)
if comm.rank == 0:
    win.post([a])
if comm.rank == a:
    data, old = np.arange(1, 5, dtype=np.int64), np.full(4, -1, np.int64)
    win.start([0])
    win.get_accumulate(data, old, 0, 0, op=rma.SUM)
    sent = data.sum()  # reading the origin is fine
    win.complete()
    assert sent == 10 and old.tolist() == [0, 0, 0, 0], (sent, old)
if comm.rank == 0:
    win.wait()
win.free()
