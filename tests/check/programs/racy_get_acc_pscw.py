"""racy: get-acc: a fetch_and_op SUM and a plain get of the same element in one PSCW epoch

Origin a increments element 0 of rank 0 with fetch_and_op(SUM), an update, while origin b
reads it with a plain get, both in access epochs that match the same post. A get is not an
accumulate-family call, so it is not atomic with respect to the update: the two accesses
are concurrent and conflicting.
"""

import numpy as np

import rma

comm = rma.init()
a, b = comm.size - 1, comm.size - 2  # two different origins; at 2 ranks b is the target itself
win = rma.Window.allocate(comm, 8, np.int64)
old, seen = np.zeros(1, np.int64), np.zeros(1, np.int64)
if comm.rank == 0:
    win.post([a, b])
if comm.rank == a:
    with win.start([0]):
        win.fetch_and_op(np.int64(1), old, 0, 0, op=rma.SUM)
if comm.rank == b:
    with win.start([0]):
        win.get(seen, 0, 0)
if comm.rank == 0:
    win.wait()
win.free()
