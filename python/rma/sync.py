"""rma.sync: high-level synchronization built on windows.

Counter: a shared ticket counter (fetch_and_op under a shared lock).
Mutex: mutual exclusion through the target-side lock manager of a window, which grants locks
in request order; a non-blocking acquire asks for a lock only if it can be granted at once.
"""

from __future__ import annotations

import numpy as np

from .comm import Comm
from .ops import LOCK_EXCLUSIVE, LOCK_SHARED, Op
from .window import Window

__all__ = ["Counter", "Mutex"]


class Counter:
    """Hand out consecutive values from one counter shared by the ranks of `comm`.

    Construction and free() are collective. The counter lives on rank `root`.
    """

    def __init__(self, comm: Comm, start: int = 0, root: int = 0) -> None:
        self._root = root
        self._window = Window.allocate(comm, 1 if comm.rank == root else 0, np.int64)
        if comm.rank == root:
            self._window.local[0] = start
        comm.barrier()  # nobody takes a ticket before the start value is in place
        self._fetched = np.zeros(1, np.int64)

    def next(self, incr: int = 1) -> int:
        """Add `incr` to the counter atomically and return its value before."""
        with self._window.lock(self._root, LOCK_SHARED):
            self._window.fetch_and_op(incr, self._fetched, self._root, 0, Op.SUM)
        return int(self._fetched[0])

    def free(self) -> None:
        """Free the counter; collective."""
        self._window.free()


class Mutex:
    """Let one rank of `comm` at a time hold the mutex; waiting ranks get it in request order.

    Construction and free() are collective. Also a context manager (`with mtx: ...`).
    """

    def __init__(self, comm: Comm) -> None:
        self._window = Window.allocate(comm, 0, np.uint8)
        self._held = False

    def acquire(self, blocking: bool = True) -> bool:
        """Take the mutex: wait for it, or with blocking=False take it only if free; say if taken."""
        if self._held:
            raise RuntimeError("rma.sync.Mutex.acquire: this rank already holds the mutex")
        if blocking:
            # (Not win.lock: on another host that returns before the grant, which rides the
            # epoch's first call, and a mutex's epoch makes none.)
            self._window._lock_at_once(0, LOCK_EXCLUSIVE)
            self._held = True
        else:
            self._held = self._window._try_lock(0, LOCK_EXCLUSIVE)
        return self._held

    def release(self) -> None:
        """Give the mutex back; RuntimeError if this rank does not hold it."""
        if not self._held:
            raise RuntimeError("rma.sync.Mutex.release: this rank does not hold the mutex")
        self._window.unlock(0)
        self._held = False

    def locked(self) -> bool:
        """Return True if this rank holds the mutex."""
        return self._held

    def __enter__(self) -> Mutex:
        self.acquire()
        return self

    def __exit__(self, *exc_info: object) -> bool:
        self.release()
        return False

    def free(self) -> None:
        """Free the mutex; collective. A rank still holding it releases it first."""
        if self._held:
            self.release()
        self._window.free()
