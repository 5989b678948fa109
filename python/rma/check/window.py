"""The window calls under RMA_CHECK: each access is recorded, each synchronization carries the clock.

The compiled window records its communication calls, completes them at its flushes, and runs
the checker's step of each synchronization call (src/core/check/call_steps.hpp, through
src/bindings/check_state.hpp; the rules, the journal and the checker's messages are in
src/core/check/ too, whose window_checker.hpp says how each synchronization carries the
clock). What is Python here: the checker's communicator and its clock board (a plain window),
the owner's loads and stores of `win.local` (local.py), and free. `Checked` is a mixin:
rma/_window_kinds.py composes it onto rma.Window (as `CheckedWindow`) for the windows of a job
under RMA_CHECK.
"""

from __future__ import annotations

import operator

import numpy as np

from .._native import _core
from ..comm import Comm
from . import clock
from .local import WatchedArray, spans_of

__all__ = ["Checked"]

# The rows of the checker's clock board (lock and unlock: 0 and 1, post: 2, complete: 3), as the
# core defines them (WindowChecker::kBoardRows, check/window_checker.hpp).
_BOARD_ROWS = _core.CHECK_BOARD_ROWS


class _PeerWatch:
    """The watcher of win.shared(rank) for another rank's memory: its loads and stores are
    accesses of this rank to that one."""

    __slots__ = ("_window", "_target", "_base")

    def __init__(self, window: Checked, target: int, base: int) -> None:
        self._window, self._target, self._base = window, target, base

    def _local_access(self, kind: str, array: np.ndarray) -> None:
        self._window._direct_access(self._target, self._base, kind, array)


class Checked:
    """A window under RMA_CHECK: its accesses, the owner's loads and stores of win.local
    included, are checked against the rules on conflicting accesses."""

    def _start_checking(self) -> None:
        comm = self._comm
        self._ck_private = Comm(comm._core.split(0, comm.rank, "Window (RMA_CHECK)"))
        # (a plain window: the board is not checked itself)
        self._ck_board = self._allocate_plain(self._ck_private, _BOARD_ROWS * len(clock.now()), np.int64)
        self._ck_board.lock_all()
        members = list(comm._core.members)
        self._ck = self._check_start(self._ck_private._core, members, self._core.label, self._ck_board._core)
        self._ck_base = self._local.__array_interface__["data"][0]

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
        self._keep_local(value, self._local)

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
    # The compiled window runs the checker's steps of its communication and synchronization
    # calls; free, whose clock board is a Python window, is here.

    def free(self):
        if self._core.freed:
            return super().free()
        # The plain free first: it may refuse (an epoch still open), and then no call may count
        # as completed (a get in flight still fills its result later) and the clock board stays
        # for the next try. Once it is done, every call completed: the checker's exchange, on a
        # communicator of its own, does not need the window.
        super().free()
        self._ck.exchange("win.free")
        self._ck_board.unlock_all()
        self._ck_board.free()
        self._ck.report()
