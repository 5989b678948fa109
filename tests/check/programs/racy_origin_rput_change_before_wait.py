"""racy: origin: the origin array of an rput is changed between the call and the request's wait

Inside lock_all, origin a issues req = win.rput(buf, 0, 1) with buf = [7, 8], sets
buf[0] = 9 and only then calls req.wait(). The wait of an rput is what completes it at the
origin (the buffer is free again after it); before it the library may still read buf, so
rank 0 may receive 7 or 9 in element 1.
"""

import numpy as np

import rma

comm = rma.init()
a = comm.size - 1  # the origin; rank 0 is the target
win = rma.Window.allocate(comm, 8, np.int64)
with win.lock_all():
    if comm.rank == a:
        buf = np.array([7, 8], np.int64)
        req = win.rput(buf, 0, 1)
        buf[0] = 9  # before req.wait()
        req.wait()
win.free()
