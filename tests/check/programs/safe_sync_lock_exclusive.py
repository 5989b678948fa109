"""safe: sync: read-modify-write of one element by every rank under an exclusive lock

Every rank locks rank 0 exclusively, gets element 0, flushes, and puts back the value
plus one. Exclusive lock epochs on one target never overlap: one rank's unlock (which
completes its put at the target) happens before the next rank's lock returns. Within an
epoch, flush(0) completes the get before the put to the same element. After a barrier,
rank 0 reads the total, which is exactly the number of ranks.
"""

import numpy as np

import rma

comm = rma.init()
win = rma.Window.allocate(comm, 8, np.int64)
value = np.zeros(1, np.int64)
with win.lock(0, rma.LOCK_EXCLUSIVE):
    win.get(value, 0, 0)
    win.flush(0)
    win.put(value + 1, 0, 0)
comm.barrier()
if comm.rank == 0:
    with win.lock(0, rma.LOCK_SHARED):
        win.get(value, 0, 0)
    assert value[0] == comm.size, value
win.free()
