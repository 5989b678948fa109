"""The owner's loads and stores of `win.local` under RMA_CHECK, seen without changing user code.

A checked window's `win.local` is a `WatchedArray`: the same memory, as an ndarray subclass
(seen.py's `SeenArray`) whose indexing, ufuncs (`+=` included), NumPy functions and common
methods tell the window which bytes they read or wrote, and from which line. The window
records them as accesses of this rank to itself, completed at once, which its journal
compares with the remote accesses by spec/002's rules (a store is a put, a load a get).
Views of it (`win.local[2:5]`) are watched too; what leaves NumPy (`memoryview`, `ctypes`, an
array made with `np.asarray`, the array given to `Window.create` itself) is not. Results of
operations are plain arrays.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._native import _core
from .seen import SeenArray

__all__ = ["WatchedArray", "spans_of"]

# Past this many elements, a strided view counts as the bytes from its first to its last.
_EXACT_ELEMENTS = 1 << 16


def spans_of(array: np.ndarray, base: int) -> tuple[tuple[int, int], ...]:
    """Return the sorted byte ranges of `array`, relative to the address `base`."""
    start = array.__array_interface__["data"][0] - base
    if array.size == 0:
        return ()
    if array.flags.c_contiguous or array.flags.f_contiguous:
        return ((start, start + array.nbytes),)
    if array.size > _EXACT_ELEMENTS or any(stride < 0 for stride in array.strides):
        low = start + sum(min(0, (n - 1) * s) for n, s in zip(array.shape, array.strides))
        high = start + sum(max(0, (n - 1) * s) for n, s in zip(array.shape, array.strides)) + array.itemsize
        return ((low, high),)
    return tuple(_core.check_strided_spans(start, array.itemsize, list(zip(array.shape, array.strides))))


class WatchedArray(SeenArray):
    """`win.local` of a checked window: an ndarray that reports its loads and stores."""

    _watcher: Any = None  # the window's checker: watcher._local_access(kind, array)

    def __array_finalize__(self, obj: Any) -> None:
        self._watcher = getattr(obj, "_watcher", None)

    def _seen(self, kind: str, array: np.ndarray | None = None) -> None:
        if self._watcher is not None:
            self._watcher._local_access(kind, self if array is None else array)

    def _adopt(self, view: Any) -> Any:
        view._watcher = self._watcher
        return view
