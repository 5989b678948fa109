"""racy: local: rank 0 stores through a view of win.local while another rank gets those bytes

Between the same two fences, origin a gets elements 3..5 of rank 0, and rank 0 takes the
view v = win.local[2:4] (elements 2 and 3) and stores 1 into v[1], which is element 3
(bytes 24..31). The get completes only at the closing fence and may read element 3 before,
after or during the store; a store counts as a put, and a put conflicts with a get of the
same bytes. Taking the view reads nothing; the store through it is the access.
"""

import numpy as np

import rma

comm = rma.init()
a = comm.size - 1  # the origin; never rank 0, the owner
win = rma.Window.allocate(comm, 8, np.int64)
result = np.zeros(3, np.int64)
win.fence()
if comm.rank == a:
    win.get(result, 0, target=np.s_[3:6])
if comm.rank == 0:
    v = win.local[2:4]
    v[1] = 1  # element 3 of the window, which the get reads
win.fence()
win.free()
