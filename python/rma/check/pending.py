"""Result arrays whose call has not completed, under RMA_CHECK: their reads are seen.

spec/002: the result array of get, get_accumulate, fetch_and_op, compare_and_swap, rget or
rget_accumulate must not be read until the call completed at the origin (its flush,
flush_local, unlock, fence, complete, or its request's wait). NumPy gives no hook on a plain
array's loads, so from the call until that completion the checker changes the class of the
caller's array (and of the arrays it is a view of) to `PendingArray`, in place: the same
object and memory, an ndarray subclass with seen.py's hooks, whose indexing, ufuncs, NumPy
functions and common methods ask the core whether the bytes they touch belong to a pending
call (src/core/check/pending_memory.hpp), which is reported at the read, naming the call and
the read. The completion changes the class back (src/bindings/pending_arrays.hpp); a view
taken meanwhile changes itself back at its first use once nothing it holds is pending.

A program that reads in time never meets it; one that reads too early is told at the read.
Until then, `type(result)` is `PendingArray` (still an `np.ndarray`). Reads that leave NumPy
(`memoryview`, `bytes(...)`, `ctypes`, a C extension's buffer, an `np.asarray(result)` view
taken before the call) are not seen.
"""

from __future__ import annotations

from typing import Any

from .._native import _core
from .seen import install

__all__ = ["PendingArray"]

# Made in C with ndarray's exact layout (a class made here would carry a garbage collector's
# header that a plain array lacks), then given the hooks.
PendingArray: Any = _core.check_pending_array_type()


def _seen(self: Any, kind: str, array: Any = None) -> None:
    _core.check_touched(self, self if array is None else array, kind == "store")


PendingArray._seen = _seen
install(PendingArray)
