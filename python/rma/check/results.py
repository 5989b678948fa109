"""Result arrays that a call still fills: changed before the call completed, they are an error.

spec/002: the result buffer of a get, get_accumulate, fetch_and_op or compare_and_swap must not
be accessed until the call has completed at the origin (a flush, flush_local, unlock, fence,
complete, or the wait of its request). On one host rma fills it at once; through a network it
fills it some time before that completion, so a program that reads it early works here and
reads old data there. Under the checker the call fills a private array instead, and the
completion copies that into the result array: a read before then sees the array as it was
before the call (as it may through a network), and a change before then is reported, from a
digest of the result array kept at the call.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from .access import Access, describe
from .local import WatchedArray
from .origins import digest, take_entry

__all__ = ["ResultWatch"]

# One watched result: the caller's array, the private one the call fills, the caller's array's
# digest at the call, and the call's access.
Entry = tuple[np.ndarray, np.ndarray, int, Access]


class ResultWatch:
    __slots__ = ("_watched",)

    def __init__(self) -> None:
        self._watched: dict[int, list[Entry]] = {}  # by target, in call order

    @staticmethod
    def stage(result: object) -> object:
        """Return the array the call should fill: a private one for a result array the watch can
        copy into (plain, C-contiguous, writable, not empty), else `result` itself (whose errors
        the call then reports as usual). win.local and its views fill in place: the owner's
        loads and stores of them are watched already."""
        if (
            type(result) is not np.ndarray
            or isinstance(result, WatchedArray)
            or result.size == 0
            or not result.flags.c_contiguous
            or not result.flags.writeable
        ):
            return result
        return np.empty_like(result)

    def watch(self, target: int, result: object, staged: object, access: Access) -> Entry | None:
        """Watch a result the call fills through `staged` (nothing to watch when not staged)."""
        if staged is result:
            return None
        entry = (result, staged, digest(result), access)
        self._watched.setdefault(target, []).append(entry)
        return entry

    def completed(self, targets: Iterable[int]) -> str | None:
        """The calls to `targets` completed at this rank: fill their result arrays; return what
        changed too early, if anything."""
        entries = [entry for target in targets for entry in self._watched.pop(target, ())]
        return _fill(entries)

    def request_completed(self, target: int, entry: Entry) -> str | None:
        """One request-based call completed (its wait or test)."""
        return _fill([entry]) if take_entry(self._watched, target, entry) else None


def _fill(entries: list[Entry]) -> str | None:
    # Every digest before any copy: two calls that fill one array (an error too) must not make
    # each other's change.
    found = None
    for result, _, before, access in entries:
        if found is None and digest(result) != before:
            found = (
                f"rma: RMA_CHECK: the result array of {describe(access)} changed before the call completed at "
                f"rank {access.origin_rank}: the library may fill it until the flush, flush_local, unlock, fence, "
                "complete or request wait that completes the call; read or change it only after that call"
            )
    for result, staged, _, _ in entries:
        np.copyto(result, staged)
    return found
