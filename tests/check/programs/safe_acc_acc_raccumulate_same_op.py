"""safe: acc-acc: raccumulate SUM from every rank, then flush, barrier and rget

Inside lock_all, every rank raccumulates rank+1 into element 4 of rank 0 with SUM: the
same op and dtype, so concurrent updates are fine. Each rank then flushes (completion at
the target) and enters a barrier, after which rank 0 reads the total with rget: ordered
after every update.
"""

import numpy as np

import rma

comm = rma.init()
win = rma.Window.allocate(comm, 8, np.int64)
result = np.zeros(1, np.int64)
with win.lock_all():
    win.raccumulate(np.int64(comm.rank + 1), 0, 4, op=rma.SUM).wait()
    win.flush(0)
    comm.barrier()
    if comm.rank == 0:
        win.rget(result, 0, 4).wait()
        assert result[0] == comm.size * (comm.size + 1) // 2, result
win.free()
