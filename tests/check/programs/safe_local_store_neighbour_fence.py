"""safe: local: rank 0 stores to the neighbours of the element another rank puts, in one fence epoch

Between the same two fences, origin a puts 7 into element 2 of rank 0 (bytes 16..23) while
rank 0 stores 1 into win.local[1] (bytes 8..15) and 3 into win.local[3] (bytes 24..31).
The store and the put are concurrent, but they touch disjoint bytes, so they do not conflict
in the unified model (win.model == "unified", where the put lands in the very memory that
win.local shows): only overlapping bytes count. After the closing fence every rank's
accesses are complete and rank 0 sees all three values.

(MPI-2's text in spec/002 also forbids a put and a local store to *different* locations of
one window at once; that restriction belongs to the separate model, where a put may update
the private copy of the whole window. This program is about the unified model.)
"""

import numpy as np

import rma

comm = rma.init()
a = comm.size - 1  # the origin; never rank 0, the owner
win = rma.Window.allocate(comm, 8, np.int64)
win.fence()
if comm.rank == a:
    win.put(np.int64(7), 0, 2)
if comm.rank == 0:
    win.local[1] = 1  # the element before the put's
    win.local[3] = 3  # the element after it
win.fence()
if comm.rank == 0:
    assert win.local[1:4].tolist() == [1, 7, 3], win.local[1:4]
win.free()
