"""safe: acc-acc: every rank takes a ticket with fetch_and_op SUM under a shared lock

Every rank holds a shared lock on rank 0 and does fetch_and_op(1, SUM) on element 0.
The calls are concurrent but are accumulate-family calls with the same op and dtype,
which are atomic per element: the tickets are 0 .. size-1, each handed out once.
"""

import numpy as np

import rma

comm = rma.init()
win = rma.Window.allocate(comm, 8, np.int64)
ticket = np.zeros(1, np.int64)
with win.lock(0, rma.LOCK_SHARED):
    win.fetch_and_op(np.int64(1), ticket, 0, 0, op=rma.SUM)
tickets = comm.allgather(int(ticket[0]))
assert sorted(tickets) == list(range(comm.size)), tickets
win.free()
