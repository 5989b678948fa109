"""racy: local: rank 0 increments all of win.local inside the exposure epoch that another rank puts in

Rank 0 posts an exposure epoch for origin a and, before its wait, adds 1 to every element
through local = win.local; local += 1 (a load and a store of bytes 0..63). Origin a starts
an access epoch to rank 0, puts 7 into element 4 (bytes 32..39) and completes. The put is
complete at rank 0 only when rank 0's wait returns; the post happens before a's put, but
nothing orders the increment and the put with each other: a store and a put to the same
bytes (and a load of bytes a put updates) are concurrent.
"""

import numpy as np

import rma

comm = rma.init()
a = comm.size - 1  # the origin; never rank 0, the owner
win = rma.Window.allocate(comm, 8, np.int64)
if comm.rank == 0:
    win.post([a])
    local = win.local
    local += 1  # reads and writes every element while a's put may land
    win.wait()
if comm.rank == a:
    with win.start([0]):
        win.put(np.int64(7), 0, 4)
win.free()
