"""racy: result: the result array of an rget is changed before the request's wait

Inside lock_all, origin a issues req = win.rget(out, 0, 2) and writes out[1] = 7 before
req.wait(). The request's wait is what completes the get at the origin; until then the
library may still write out.
"""

import numpy as np

import rma

comm = rma.init()
a = comm.size - 1  # the origin; rank 0 is the target
win = rma.Window.allocate(comm, 8, np.int64)
with win.lock_all():
    if comm.rank == a:
        out = np.zeros(3, np.int64)
        req = win.rget(out, 0, 2)
        out[1] = 7  # too early
        req.wait()
win.free()
