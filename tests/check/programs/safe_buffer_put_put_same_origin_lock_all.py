"""safe: buffer: two puts and an accumulate send one origin array, all pending at once

Inside lock_all, origin a puts buf = [3, 4] into elements 0..1 and 2..3 of rank 0 and
accumulates it into elements 4..5, with no completion between the calls. All three only
read buf, and concurrent reads of one origin buffer are allowed (spec/002's rationale: MPI
allows two concurrent puts with overlapping send buffers). Only a call that writes a local
array (a get or the result of a fetching call) conflicts with another call on it.
"""

import numpy as np

import rma

comm = rma.init()
a = comm.size - 1  # the origin; rank 0 is the target
win = rma.Window.allocate(comm, 8, np.int64)
with win.lock_all():
    if comm.rank == a:
        buf = np.array([3, 4], np.int64)
        win.put(buf, 0, 0)
        win.put(buf, 0, 2)  # a second reader of buf
        win.accumulate(buf, 0, 4, op=rma.SUM)  # and a third
        win.flush(0)
        back = np.zeros(6, np.int64)
        win.get(back, 0, 0)
        win.flush(0)
        assert back.tolist() == [3, 4, 3, 4, 3, 4], back
win.free()
