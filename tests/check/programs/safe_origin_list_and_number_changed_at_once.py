"""safe: origin: a list and a Python number as origins, changed right after the call

In one fence epoch, origin a puts the list values = [1, 2] into elements 0..1 of rank 0
and changes values[0] = 9 at once, and accumulates the Python int n = 5 into element 3 and
rebinds n += 1 at once. A list or a number is converted into a new array at the call, so
the library never reads the caller's object afterwards: changing it is no error. In the
next epoch a gets the elements back: 1, 2 and 5.
"""

import numpy as np

import rma

comm = rma.init()
a = comm.size - 1  # the origin; rank 0 is the target
win = rma.Window.allocate(comm, 8, np.int64)
back = np.zeros(4, np.int64)
win.fence()
if comm.rank == a:
    values = [1, 2]
    win.put(values, 0, 0)
    values[0] = 9  # the put copied the list at the call
    n = 5
    win.accumulate(n, 0, 3, op=rma.SUM)
    n += 1
win.fence()
if comm.rank == a:
    win.get(back, 0, target=np.s_[0:4])
win.fence()
if comm.rank == a:
    assert back.tolist() == [1, 2, 0, 5], back
win.free()
