"""safe: get-acc: gets, fetch_and_op NO_OP and get_accumulate NO_OP from every rank

Inside lock_all, every rank reads elements 0..3 of rank 0 three ways: a plain get,
fetch_and_op with NO_OP on element 0, and get_accumulate with NO_OP on elements 0..3.
All these accesses are concurrent, but all are reads: get/get never conflicts, and an
accumulate-family call with NO_OP does not update the target, so it does not conflict
with a get either.
"""

import numpy as np

import rma

comm = rma.init()
win = rma.Window.allocate(comm, 8, np.int64)
plain, one, many = np.zeros(4, np.int64), np.zeros(1, np.int64), np.zeros(4, np.int64)
with win.lock_all():
    win.get(plain, 0, target=np.s_[0:4])
    win.fetch_and_op(np.int64(0), one, 0, 0, op=rma.NO_OP)
    win.get_accumulate(np.zeros(4, np.int64), many, 0, 0, op=rma.NO_OP)
assert not plain.any() and not one.any() and not many.any()
win.free()
