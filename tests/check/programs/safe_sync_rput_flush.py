"""safe: sync: rput, req.wait(), flush, barrier, then another rank's rget of the same element

Like racy_put_get_rput_wait.py, but origin a calls flush(0) after waiting on its rput
request. The flush completes the put at the target before the barrier, which happens
before b's rget: the put and the get are ordered, and b reads 7.
"""

import numpy as np

import rma

comm = rma.init()
a, b = comm.size - 1, comm.size - 2  # two different origins; at 2 ranks b is the target itself
win = rma.Window.allocate(comm, 8, np.int64)
result = np.zeros(1, np.int64)
with win.lock_all():
    if comm.rank == a:
        win.rput(np.int64(7), 0, 2).wait()
        win.flush(0)  # now complete at the target
    comm.barrier()
    if comm.rank == b:
        win.rget(result, 0, 2).wait()
        assert result[0] == 7, result
win.free()
