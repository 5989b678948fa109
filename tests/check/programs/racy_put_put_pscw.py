"""racy: put-put: every rank puts to element 0 of rank 0 in one PSCW exposure epoch

Rank 0 posts one exposure epoch for all ranks (itself included) and every rank starts an
access epoch to rank 0 and puts its rank into element 0. All access epochs match the same
post, and nothing orders one origin's complete before another origin's put: the puts are
concurrent and write the same bytes. With 2 ranks the pair is rank 1 and rank 0 itself.
"""

import numpy as np

import rma

comm = rma.init()
win = rma.Window.allocate(comm, 8, np.int64)
if comm.rank == 0:
    win.post(range(comm.size))
with win.start([0]):
    win.put(np.int64(comm.rank), 0, 0)
if comm.rank == 0:
    win.wait()
win.free()
