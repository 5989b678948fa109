"""Origin arrays that a call may still read: changed before the call completed, they are an error.

spec/002: the origin buffer of a put or accumulate must not be updated until the call has
completed at the origin (a flush, flush_local, unlock, fence, complete, or the wait of its
request). rma copies small origins at once on one host, but not a large put through libfabric,
which reads the array in place until then; the same program then sends what the array holds at
some later moment. The watch keeps a digest of each origin array at the call and compares it
when the call completes.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable

import numpy as np

from .access import Access, describe

__all__ = ["OriginWatch", "digest", "take_entry"]


def digest(array: np.ndarray) -> int:
    """A digest of an array's bytes (results.py watches result arrays with it too)."""
    return zlib.crc32(array.data if array.flags.c_contiguous else array.tobytes())


def take_entry(watched: dict[int, list], target: int, entry: object) -> bool:
    """Take one request's entry out of a watch's lists by target; return whether it was still
    there (a flush or unlock may have completed it first). results.py shares it."""
    entries = watched.get(target, [])
    if not any(item is entry for item in entries):
        return False
    entries[:] = [item for item in entries if item is not entry]
    return True


class OriginWatch:
    __slots__ = ("_watched",)

    def __init__(self) -> None:
        # By target: (the array, its digest at the call, the call's access), in call order.
        self._watched: dict[int, list[tuple[np.ndarray, int, Access]]] = {}

    def watch(self, target: int, origin: object, access: Access) -> tuple[np.ndarray, int, Access] | None:
        """Watch an origin array (numbers and lists were copied at the call: nothing to watch)."""
        if not isinstance(origin, np.ndarray) or origin.size == 0:
            return None
        entry = (origin, digest(origin), access)
        self._watched.setdefault(target, []).append(entry)
        return entry

    def completed(self, targets: Iterable[int]) -> str | None:
        """The calls to `targets` completed at this rank: return what changed too early, if anything."""
        found = None
        for target in targets:
            for entry in self._watched.pop(target, ()):
                found = found or _changed(entry)
        return found

    def request_completed(self, target: int, entry: tuple[np.ndarray, int, Access]) -> str | None:
        """One request-based call completed (its wait or test)."""
        return _changed(entry) if take_entry(self._watched, target, entry) else None


def _changed(entry: tuple[np.ndarray, int, Access]) -> str | None:
    array, before, access = entry
    if digest(array) == before:
        return None
    return (
        f"rma: RMA_CHECK: the origin array of {describe(access)} changed before the call completed at rank "
        f"{access.origin_rank}: the library may read it until the flush, flush_local, unlock, fence, complete or "
        "request wait that completes the call; change it after that call (or pass a copy)"
    )
