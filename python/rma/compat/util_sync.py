"""mpi4py.util.sync over rma: Sequential, Counter, Mutex, Condition, Semaphore.

Each is built on rma's own windows and messages (not on the facade's MPI.Win), so that it costs
what rma.sync costs. Construction and free() are collective over `comm`; free() is idempotent,
and any other call after it raises RuntimeError, as mpi4py's do.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

import rma as _rma

from .comm import COMM_SELF, Comm
from .info import INFO_NULL, Info

__all__ = ["Sequential", "Counter", "Mutex", "Condition", "Semaphore"]


class Sequential:
    """Run a block on one rank at a time, in rank order (`with Sequential(comm): ...`)."""

    def __init__(self, comm: Comm, tag: int = 0) -> None:
        self.comm = comm
        self.tag = tag

    def begin(self) -> None:
        """Wait for the rank before this one to end its turn."""
        comm = self.comm._base
        if comm.rank > 0:
            comm.recv(comm.rank - 1, self.tag)

    def end(self) -> None:
        """End this rank's turn: the next rank begins."""
        comm = self.comm._base
        if comm.rank < comm.size - 1:
            comm.send(None, comm.rank + 1, self.tag)

    def __enter__(self) -> Sequential:
        self.begin()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.end()


class Counter:
    """A counter that every rank of `comm` advances atomically; it lives on rank `root`."""

    def __init__(
        self,
        start: int = 0,
        step: int = 1,
        *,
        typecode: str = "i",
        typechar: str | None = None,
        comm: Comm = COMM_SELF,
        info: Info = INFO_NULL,
        root: int = 0,
    ) -> None:
        base = comm._base
        self._dtype = np.dtype(typechar or typecode)
        self._step = step
        self._root = root
        self._window: _rma.Window | None = _rma.Window.allocate(base, 1 if base.rank == root else 0, self._dtype)
        if base.rank == root:
            self._window.local[0] = start
        base.barrier()  # nobody advances it before the start value is in place
        self._fetched = np.zeros(1, self._dtype)

    def __iter__(self) -> Counter:
        return self

    def __next__(self) -> Any:
        return self.next()

    def next(self, incr: Any = None) -> Any:
        """Add `incr` (the step when None) and return the value before, atomically."""
        window = _open(self._window, "Counter.next")
        operand = np.array(self._step if incr is None else incr).astype(self._dtype)
        with window.lock(self._root, _rma.LOCK_SHARED):
            window.fetch_and_op(operand, self._fetched, self._root, 0, _rma.SUM)
        return self._fetched[0].item()

    def _compare_and_swap(self, expected: Any, desired: Any) -> Any:
        """Set the counter to `desired` if it holds `expected`, atomically; return what it held."""
        window = _open(self._window, "Counter")
        values = np.array([desired, expected], self._dtype)
        with window.lock(self._root, _rma.LOCK_SHARED):
            window.compare_and_swap(values[:1], values[1:], self._fetched, self._root, 0)
        return self._fetched[0].item()

    def free(self) -> None:
        """Free the counter (collective; again: nothing)."""
        if self._window is not None:
            self._window.free()
            self._window = None


class Mutex:
    """Mutual exclusion among the ranks of `comm`; `recursive=True` lets the holder take it again."""

    def __init__(self, comm: Comm = COMM_SELF, info: Info = INFO_NULL, *, recursive: bool = False) -> None:
        self._comm = comm
        self._mutex: _rma.sync.Mutex | None = _rma.sync.Mutex(comm._base)
        self._recursive = recursive
        self._count = 0

    def acquire(self, blocking: bool = True) -> bool:
        """Take the mutex (waiting for it, or not with blocking=False); say whether it was taken."""
        mutex = _open(self._mutex, "Mutex.acquire")
        if self._count and self._recursive:
            self._count += 1
            return True
        if self._count:
            raise RuntimeError("rma.compat: Mutex.acquire: this rank already holds the mutex (not recursive)")
        if mutex.acquire(blocking):
            self._count = 1
            return True
        return False

    def release(self) -> None:
        """Give the mutex back (a recursive one: one level)."""
        mutex = _open(self._mutex, "Mutex.release")
        if not self._count:
            raise RuntimeError("rma.compat: Mutex.release: this rank does not hold the mutex")
        self._count -= 1
        if not self._count:
            mutex.release()

    def locked(self) -> bool:
        """Whether this rank holds the mutex."""
        _open(self._mutex, "Mutex.locked")
        return self._count > 0

    def count(self) -> int:
        """How many times this rank holds the mutex (recursive mutexes)."""
        _open(self._mutex, "Mutex.count")
        return self._count

    def __enter__(self) -> Mutex:
        self.acquire()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.release()

    def free(self) -> None:
        """Free the mutex (collective; a holder releases it first; again: nothing)."""
        if self._mutex is not None:
            self._count = 0
            self._mutex.free()
            self._mutex = None

    def _release_all(self) -> int:
        held, self._count = self._count, 1
        self.release()
        return held

    def _acquire_again(self, held: int) -> None:
        self.acquire()
        self._count = held


# A condition's window: on every rank, its wake-up flag; on rank 0 also the queue of waiters
# (each waiting rank's ticket, 0 when not waiting) and the next ticket.
_WAKE = 0


class Condition:
    """A condition variable among the ranks of `comm` over a Mutex (its own when none is given).

    wait() queues this rank, releases the mutex, sleeps until a notify() picks it (first come,
    first picked) and takes the mutex again. notify(n) wakes up to n waiting ranks and returns
    how many it woke.
    """

    def __init__(
        self, mutex: Mutex | None = None, comm: Comm = COMM_SELF, info: Info = INFO_NULL, *, recursive: bool = False
    ) -> None:
        self._own_mutex = mutex is None
        self._mutex = mutex if mutex is not None else Mutex(comm, info, recursive=recursive)
        base = self._mutex._comm._base
        self._size, self._rank = base.size, base.rank
        length = 1 + (base.size + 1 if base.rank == 0 else 0)
        self._window: _rma.Window | None = _rma.Window.allocate(base, length, np.int64)
        self._one = np.ones(1, np.int64)
        self._ticket = np.zeros(1, np.int64)

    def acquire(self, blocking: bool = True) -> bool:
        _open(self._window, "Condition.acquire")
        return self._mutex.acquire(blocking)

    def release(self) -> None:
        _open(self._window, "Condition.release")
        self._mutex.release()

    def __enter__(self) -> Condition:
        self.acquire()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.release()

    def wait(self) -> bool:
        """Wait for a notify(); the mutex is released meanwhile and held again on return."""
        window = self._held(_open(self._window, "Condition.wait"), "wait")
        with window.lock(0):
            window.fetch_and_op(self._one, self._ticket, 0, 1 + self._size, _rma.SUM)
            window.put(self._ticket + 1, 0, 1 + self._rank)  # (tickets in the queue are never 0)
        held = self._mutex._release_all()
        window.wait_until(_WAKE, "==", 1)
        with window.lock(self._rank):
            window.put(np.zeros(1, np.int64), self._rank, _WAKE)
        self._mutex._acquire_again(held)
        return True

    def wait_for(self, predicate: Callable[[], Any]) -> Any:
        """Wait until predicate() is true (it is asked first, and after each wake-up); return it."""
        self._held(_open(self._window, "Condition.wait_for"), "wait_for")
        result = predicate()
        while not result:
            self.wait()
            result = predicate()
        return result

    def notify(self, n: int = 1) -> int:
        """Wake up to `n` waiting ranks, those that came first; return how many were woken."""
        window = self._held(_open(self._window, "Condition.notify"), "notify")
        queue = np.zeros(self._size, np.int64)
        with window.lock(0):
            window.get(queue, 0, 1)
            waiting = sorted((ticket, rank) for rank, ticket in enumerate(queue) if ticket)
            woken = [rank for _, rank in waiting[: max(0, n)]]
            for rank in woken:
                window.put(np.zeros(1, np.int64), 0, 1 + rank)
        for rank in woken:
            with window.lock(rank):
                window.put(self._one, rank, _WAKE)
        return len(woken)

    def notify_all(self) -> int:
        """Wake every waiting rank; return how many were woken."""
        return self.notify(self._size)

    def free(self) -> None:
        """Free the condition and, if it made it, its mutex (collective; again: nothing). A rank
        holding the mutex releases it first: the others may be waiting for it."""
        if self._window is not None:
            if self._mutex._mutex is not None and self._mutex._count:
                self._mutex._release_all()
            self._window.free()
            self._window = None
            if self._own_mutex:
                self._mutex.free()

    def _held(self, window: _rma.Window, call: str) -> _rma.Window:
        if self._mutex._mutex is None or not self._mutex._count:
            raise RuntimeError(f"rma.compat: Condition.{call}: this rank does not hold the condition's mutex")
        return window


class Semaphore:
    """A counting semaphore among the ranks of `comm`; `bounded` refuses releases past the start value."""

    def __init__(self, value: int = 1, *, bounded: bool = True, comm: Comm = COMM_SELF, info: Info = INFO_NULL) -> None:
        if value < 0:
            raise ValueError(f"rma.compat: Semaphore: the initial value must be >= 0, not {value}")
        self._value = value
        self._bounded = bounded
        self._counter = Counter(value, comm=comm, info=info, typecode="q")

    def acquire(self, blocking: bool = True) -> bool:
        """Take one unit: wait for one, or with blocking=False only if one is free; say whether taken."""
        # Compare-and-swap, so that no other rank ever sees the count pass through a value that
        # no acquire or release gave it (a decrement undone later would show as one).
        pause = 0.0001
        while True:
            value = self._counter.next(0)
            while value > 0:
                seen = self._counter._compare_and_swap(value, value - 1)
                if seen == value:
                    return True
                value = seen
            if not blocking:
                return False
            time.sleep(pause)  # (another rank's release ends the wait; it is polled, with backoff)
            pause = min(pause * 2, 0.01)

    def release(self, n: int = 1) -> None:
        """Give back `n` units."""
        if n < 1:
            raise ValueError(f"rma.compat: Semaphore.release: n must be >= 1, not {n}")
        value = self._counter.next(0)
        while True:
            if self._bounded and value + n > self._value:
                raise ValueError("rma.compat: Semaphore.release: released too many times (bounded semaphore)")
            seen = self._counter._compare_and_swap(value, value + n)
            if seen == value:
                return
            value = seen

    def __enter__(self) -> Semaphore:
        self.acquire()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.release()

    def free(self) -> None:
        """Free the semaphore (collective; again: nothing)."""
        self._counter.free()


def _open(thing: Any, call: str) -> Any:
    if thing is None:
        raise RuntimeError(f"rma.compat: {call}: it was freed")
    return thing
