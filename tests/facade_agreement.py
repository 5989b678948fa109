"""The facade's compiled calls against its general path, on whatever window kind the job makes.

MPI.Win's data and synchronization calls are compiled for plain arrays and positional
arguments (src/bindings/facade_window.cpp); every other form goes to the Python method of the
same name with a leading underscore (`_Put`...). `agree()` runs both on one window and checks
that they scale a displacement by the target's own disp_unit (different on each rank), move
the same data and return what mpi4py returns, and counts which calls took the general path:
the compiled ones must not, whatever kind of window is underneath (RMA_CHECK=1's checked window,
RMA_MODEL=separate's, both), so that a bug of the compiled path cannot hide behind a kind.
tests/test_compat.py runs it in the pool of ranks and under each setting.
"""

from __future__ import annotations

import time
from collections import Counter

import numpy as np
import pytest

# The Python methods the compiled calls fall back on.
GENERAL = [
    "_Put",
    "_Get",
    "_Accumulate",
    "_Get_accumulate",
    "_Fetch_and_op",
    "_Compare_and_swap",
    "_Lock",
    "_Fence",
    "_Complete",
    "_Wait",
    "_Test",
    "_Unlock",
    "_Lock_all",
    "_Unlock_all",
    "_Flush",
    "_Flush_all",
    "_Flush_local",
    "_Flush_local_all",
    "_Sync",
]


def counting(win_class: type) -> tuple[type, Counter]:
    """A subclass of MPI.Win whose general path counts its calls by name ("Put"...)."""
    taken: Counter = Counter()

    def wrap(name: str):
        original = getattr(win_class, name)

        def call(self, *args, **kwargs):
            taken[name[1:]] += 1
            return original(self, *args, **kwargs)

        return call

    return type("CountedWin", (win_class,), {name: wrap(name) for name in GENERAL}), taken


def agree(kind: str) -> None:
    """The calls on this rank; `kind` is the name the window underneath must have."""
    from rma.compat import MPI

    world = MPI.COMM_WORLD
    rank, size = world.Get_rank(), world.Get_size()
    right, left = (rank + 1) % size, (rank - 1) % size
    unit = 4 if rank % 2 == 0 else 8
    counted, taken = counting(MPI.Win)
    win = counted.Allocate(64, unit, comm=world)
    assert type(win._win).__name__ == kind
    memory = np.frombuffer(win.tomemory(), np.uint8)  # (under RMA_MODEL=separate: the private copy)
    right_unit = 4 if right % 2 == 0 else 8

    assert win.Fence() is None
    win.Put(np.array([rank + 1], np.int32), right, 2)  # compiled: bytes 2 * unit(right)
    win.Put(origin=np.array([rank + 101], np.int32), target_rank=right, target=3)  # keywords too
    assert not taken, taken
    with pytest.raises(TypeError):
        win.Put(np.zeros(1, np.int32), right, 3, bogus=1)  # (Python's own error, from the Python path)
    assert taken == Counter(Put=1)
    win.Fence(0)
    mine = 4 if rank % 2 == 0 else 8
    assert memory[2 * mine : 2 * mine + 4].view(np.int32)[0] == left + 1
    assert memory[3 * mine : 3 * mine + 4].view(np.int32)[0] == left + 101
    got, got_too = np.zeros(1, np.int32), np.zeros(1, np.int32)
    win.Get(got, right, 2)
    win.Get([got_too, MPI.INT], right, 3)  # a buffer specification: Python
    win.Fence(assertion=0)  # a keyword: Python
    assert (got[0], got_too[0]) == (rank + 1, rank + 101)
    assert taken == Counter(Put=1, Get=1, Fence=1)
    taken.clear()

    win.Lock(right, lock_type=MPI.LOCK_SHARED)
    counter, old = np.array([5], np.int64), np.zeros(1, np.int64)
    target = 32 // right_unit  # byte 32 of the right neighbour's memory (past the puts above)
    win.Accumulate(counter, right, target, op=MPI.SUM)
    win.Flush(right)
    win.Fetch_and_op(counter, old, right, target)
    win.Flush_local(right)
    win.Get_accumulate(counter, old, right, target, MPI.NO_OP)
    win.Flush_all()
    fetched = old[0]
    win.Compare_and_swap(np.array([-1], np.int64), np.array([10], np.int64), old, right, target)
    win.Flush_local_all()
    assert win.Unlock(right) is None
    world.Barrier()
    win.Lock(rank)  # MPI's default lock type: exclusive (and, separate, the copies meet)
    value = memory[32:40].view(np.int64)[0]
    win.Sync()
    win.Unlock(rank)
    assert fetched == 10 and old[0] == 10 and value == -1

    group = win.Get_group()
    win.Post(group)
    win.Start(group)
    win.Complete()
    assert win.Wait() is True
    win.Post(group)
    win.Start(group)
    win.Complete()
    deadline = time.monotonic() + 30
    while not win.Test():  # (Returns False until every origin completed)
        assert time.monotonic() < deadline, "Win.Test never ended the exposure epoch"
    win.Lock_all()
    win.Unlock_all()
    assert not taken, taken

    with pytest.raises(MPI.Exception) as beyond:
        win.Get(np.zeros(1, np.int32), right, 1 << 40)  # compiled: rma's range check, translated
    assert beyond.value.Get_error_class() == MPI.ERR_RMA_SYNC  # (no epoch: that comes first)
    win.Lock_all()
    with pytest.raises(MPI.Exception) as beyond:
        win.Get(np.zeros(1, np.int32), right, 1 << 40)
    assert beyond.value.Get_error_class() == MPI.ERR_RMA_RANGE and "rma: win.get" in str(beyond.value)
    assert not taken, taken
    with pytest.raises(MPI.Exception):
        win.Put(np.zeros(1, np.int32), right, 1 << 62)  # bytes beyond int64: the Python path says so
    assert taken == Counter(Put=1)
    with pytest.raises(MPI.Exception) as bad_rank:
        win.Fetch_and_op(counter, old, size, 0)
    assert bad_rank.value.Get_error_class() == MPI.ERR_RANK
    with pytest.raises(MPI.Exception) as locked:
        win.Lock(right)  # already in a lock_all epoch
    assert locked.value.Get_error_class() == MPI.ERR_RMA_SYNC
    win.Unlock_all()
    assert taken == Counter(Put=1)
    with pytest.raises(MPI.Exception) as lock_type:
        win.Lock(right, 3)
    assert lock_type.value.Get_error_class() == MPI.ERR_LOCKTYPE
    assert taken == Counter(Put=1, Lock=1)
    win.Free()
    for call in (
        lambda: win.Put(counter, right),
        lambda: win.Get(counter, right),
        lambda: win.Accumulate(counter, right),
        lambda: win.Get_accumulate(counter, old, right),
        lambda: win.Fetch_and_op(counter, old, right),
        lambda: win.Compare_and_swap(counter, counter, old, right),
        lambda: win.Lock(right),
        lambda: win.Flush(right),
        lambda: win.Fence(),
        lambda: win.Test(),
    ):
        with pytest.raises(MPI.Exception, match="WIN_NULL") as freed:
            call()
        assert freed.value.Get_error_class() == MPI.ERR_WIN
