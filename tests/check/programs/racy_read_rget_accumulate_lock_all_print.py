"""racy: read: the result of an rget_accumulate is printed before the request's wait

Inside lock_all, origin a issues req = win.rget_accumulate(ones, got, 0, 6), which adds 1
to elements 6 and 7 of rank 0 and fetches what they held into got, then prints got before
req.wait(). Printing reads every element of got, which the call may still be filling.
"""

import numpy as np

import rma

comm = rma.init()
a = comm.size - 1  # the origin; rank 0 is the target
win = rma.Window.allocate(comm, 8, np.int64)
with win.lock_all():
    if comm.rank == a:
        ones, got = np.ones(2, np.int64), np.full(2, -1, np.int64)
        req = win.rget_accumulate(ones, got, 0, 6, op=rma.SUM)
        print("elements 6 and 7 held", got)  # too early: before req.wait()
        req.wait()
win.free()
