"""The window calls under RMA_CHECK: each access is recorded, each synchronization carries the clock.

The compiled window records its communication calls and completes them at its flushes
(src/bindings/check_state.hpp; the rules, the journal and the checker's messages are in
src/core/check/). What is Python here: the owner's loads and stores of `win.local` (local.py),
and the synchronization calls, which run the checker's step after the plain call:

- fence and free: every rank hands every other rank its accesses in one exchange, with its
  clock; the journals then forget, as a fence orders everything before it before everything
  after it;
- post/start/complete/wait: post sends the target's clock to the origins of its group (start
  takes it before the first access to that target), complete sends the origin's clock and
  accesses to each target, and wait (or a test that succeeds) takes them in;
- lock/unlock: the clock goes through a second, private window (the "lock clocks"): unlock
  leaves this rank's clock at the target, and lock takes what earlier holders left there
  (an exclusive lock: every holder's; a shared one: the exclusive holders' only, since shared
  locks do not order each other); the accesses go to the target in messages that it reads
  at its own next synchronization call, and at the latest at free.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from functools import partial

import numpy as np

from .._python_epoch import PythonEpoch
from ..comm import Comm
from ..group import Group
from ..ops import LOCK_EXCLUSIVE, MAX, PROC_NULL
from ..window import Window, _keep_local, adopt_docs
from . import clock
from .local import WatchedArray, spans_of

__all__ = ["CheckedWindow"]


def _ranks(group: Group | list) -> list[int]:
    """Return a group's ranks, once the call has accepted it."""
    return list(group.ranks) if isinstance(group, Group) else [operator.index(rank) for rank in group]


class _PeerWatch:
    """The watcher of win.shared(rank) for another rank's memory: its loads and stores are
    accesses of this rank to that one."""

    __slots__ = ("_window", "_target", "_base")

    def __init__(self, window: CheckedWindow, target: int, base: int) -> None:
        self._window, self._target, self._base = window, target, base

    def _local_access(self, kind: str, array: np.ndarray) -> None:
        self._window._direct_access(self._target, self._base, kind, array)


class _Companion(Window):
    """The private window of lock clocks (a subclass, so that it is not checked itself)."""


class CheckedWindow(Window):
    def _start_checking(self) -> None:
        comm = self._comm
        self._ck_private = Comm(comm._core.split(0, comm.rank, "Window (RMA_CHECK)"))
        self._ck = self._check_start(self._ck_private._core, list(comm._core.members), self._core.label)
        self._ck_base = self._local.__array_interface__["data"][0]
        self._ck_access_group: list[int] = []
        self._ck_exposure_group: list[int] | None = None
        self._ck_locks: dict[int, bool] = {}  # target -> exclusive
        self._ck_lock_all = False
        self._ck_clocks: Window | None = None
        if not self._info.get("no_locks"):
            self._ck_clocks = _Companion.allocate(self._ck_private, 2 * len(clock.now()), np.int64)
            self._ck_clocks.lock_all()

    # ---- the owner's loads and stores ----

    @property
    def local(self) -> np.ndarray:
        """Return this rank's window memory as a NumPy array (zero-copy; RMA_CHECK watches it)."""
        self._check_open("local")
        watched = self._local.view(WatchedArray)
        watched._watcher = self
        return watched

    @local.setter
    def local(self, value: np.ndarray) -> None:
        _keep_local(value, self._local)

    def shared(self, rank):
        view = super().shared(rank)  # (checks the rank and the window's flavor)
        target = operator.index(rank)
        watched = view.view(WatchedArray)
        if target == self._comm.rank:
            watched._watcher = self
        else:
            watched._watcher = _PeerWatch(self, target, view.__array_interface__["data"][0])
        return watched

    def _local_access(self, kind: str, array: np.ndarray) -> None:
        """Record a load or store of win.local: an access of this rank to itself, complete at once."""
        self._direct_access(self._comm.rank, self._ck_base, kind, array)

    def _direct_access(self, target: int, base: int, kind: str, array: np.ndarray) -> None:
        """Record a load or store of `target`'s memory (win.local, or win.shared(target) of a
        shared window, mapped at `base`)."""
        spans = spans_of(array, base)
        if spans:
            self._ck.direct(target, kind == "store", spans)

    # ---- synchronization ----
    # The communication calls and the flushes are checked by the compiled window. A conflict
    # found while a call is made is reported at its end, once the call's own work is done, and
    # never by an opening call (post, start, lock, lock_all), which would leave its epoch open
    # behind the exception: the closing call, or any later one, reports it.

    def fence(self, mode=0):
        super().fence(mode)
        self._exchange_all("win.fence")
        self._ck.report()
        return PythonEpoch(self, self._close_fence)

    def _close_fence(self) -> None:
        from ..ops import Mode

        self.fence(Mode.NOSUCCEED)

    def post(self, group, mode=0):
        members = group if isinstance(group, Group) else list(group)  # an iterator is read once
        super().post(members, mode)
        ranks = _ranks(members)
        self._ck.post(ranks)
        self._ck_exposure_group = ranks
        self._ck.new_epoch("exposure (post)")
        return PythonEpoch(self, self.wait)

    def start(self, group, mode=0):
        members = group if isinstance(group, Group) else list(group)  # an iterator is read once
        super().start(members, mode)
        ranks = _ranks(members)
        self._ck.expect_posts(ranks)
        self._ck_access_group = ranks
        self._ck.new_epoch("start")
        return PythonEpoch(self, self.complete)

    def complete(self):
        super().complete()
        group, self._ck_access_group = self._ck_access_group, []
        self._ck.completed_here(group)
        self._ck.send_completes(group)
        self._ck.report()

    def wait(self):
        super().wait()
        self._take_completes()

    def test(self):
        done = super().test()
        if done:
            self._take_completes()
        return done

    def _take_completes(self) -> None:
        group, self._ck_exposure_group = self._ck_exposure_group or [], None
        self._ck.take_completes(group)
        self._ck.report()

    def lock(self, rank, lock_type=LOCK_EXCLUSIVE, mode=0):
        super().lock(rank, lock_type, mode)
        exclusive = lock_type == LOCK_EXCLUSIVE
        with self._given_back_if_interrupted(partial(super().unlock, rank)):
            self._ck.drain()
            if rank != PROC_NULL:
                # An exclusive lock comes after every earlier holder; a shared one after the exclusive ones.
                self._take_lock_clocks([rank], every_holder=exclusive)
        self._ck_locks[rank] = exclusive
        self._ck.new_epoch(f"{'exclusive' if exclusive else 'shared'} lock", f" on rank {rank}")
        return PythonEpoch(self, lambda: self.unlock(rank))

    @contextmanager
    def _given_back_if_interrupted(self, release: Callable[[], None]) -> Iterator[None]:
        """The checker's work after a lock was granted: if it raises (a KeyboardInterrupt, as a
        Ctrl-C does), give the lock back before the exception leaves lock(), as the plain lock
        does, so that no lock stays held by a call that failed."""
        try:
            yield
        except BaseException:
            release()
            raise

    def unlock(self, rank):
        exclusive = self._ck_locks.pop(rank, None)
        if exclusive is not None and rank != PROC_NULL:
            self._release([rank], exclusive)
        super().unlock(rank)
        self._completed_here([rank])

    def lock_all(self, mode=0):
        super().lock_all(mode)
        with self._given_back_if_interrupted(super().unlock_all):
            self._ck.drain()
            self._take_lock_clocks(range(self._comm.size), every_holder=False)
        self._ck_lock_all = True
        self._ck.new_epoch("lock_all")
        return PythonEpoch(self, self.unlock_all)

    def unlock_all(self):
        if self._ck_lock_all:
            self._ck_lock_all = False
            self._release(range(self._comm.size), exclusive=False)
        super().unlock_all()
        self._completed_here(range(self._comm.size))

    def sync(self):
        super().sync()
        self._ck.drain()
        self._ck.report()

    def free(self):
        if self._core.freed:
            return super().free()
        self._exchange_all("win.free")
        super().free()  # may refuse (an epoch still open): the lock clocks stay for the next try
        if self._ck_clocks is not None:
            self._ck_clocks.unlock_all()
            self._ck_clocks.free()
        self._ck.report()

    # ---- completion and delivery ----

    def _completed_here(self, targets: Iterable[int]) -> None:
        """After an unlock: the calls to targets completed at this rank too."""
        self._ck.completed_here(list(targets))
        self._ck.drain()
        self._ck.report()

    def _exchange_all(self, call: str) -> None:
        """At a fence or free: the calls to every rank completed here and there, and every rank's
        accesses to every other exchanged."""
        self._ck.completed_here(range(self._comm.size))
        self._ck.exchange_all(f"{call} (RMA_CHECK's exchange of accesses)")

    def _release(self, targets: Iterable[int], exclusive: bool) -> None:
        """Before an unlock: complete the accesses, leave this rank's clock at the targets, send."""
        targets = list(targets)
        self._ck.complete(targets)
        now = np.asarray(clock.publish(), dtype=np.int64)
        size = now.size
        for target in targets:
            self._ck_clocks.accumulate(now, target, 0, MAX)
            if exclusive:
                self._ck_clocks.accumulate(now, target, size, MAX)
        self._ck_clocks.flush_all()
        for target in targets:
            self._ck.send(target)

    def _take_lock_clocks(self, targets: Iterable[int], every_holder: bool) -> None:
        size = len(clock.now())
        buffers = []
        for target in targets:
            buffer = np.empty(size, np.int64)
            self._ck_clocks.get(buffer, target, 0 if every_holder else size)
            buffers.append(buffer)
        self._ck_clocks.flush_all()
        clock.merge_all(buffer.tolist() for buffer in buffers)


adopt_docs(CheckedWindow)  # its calls say what the plain ones say (help(), IPython's ?)
