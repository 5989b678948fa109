"""What a target rank learnt of the accesses to its memory, checked as each one arrives.

Origins send their accesses to the target once a flush, unlock, complete or fence completed
them there. The journal compares each arrival with what it holds from the other origins (an
origin's own accesses were compared at the origin, when it made them) and returns the first
pair that conflicts and that nothing orders. It forgets everything at a fence or free: every
access made before one happened before every access made after it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

from .access import Access, conflict, describe, ordered, overlap

__all__ = ["Journal"]

# How many accesses the journal keeps per origin, call site, kind and bytes (the oldest go
# first): a loop of locked updates would otherwise make the journal grow without end. An older
# access of the same shape from the same origin is ordered before the newer ones, so a
# conflict with it is, in every case we have met, a conflict with a newer one too.
_KEPT_PER_SHAPE = 16


class Journal:
    __slots__ = ("_shapes", "window")

    def __init__(self, window: str) -> None:
        self.window = window  # names the window in messages
        self._shapes: dict[tuple, deque[Access]] = {}

    def add(self, accesses: Iterable[Access]) -> str | None:
        """Take in accesses to this rank; return the message of the first conflict, or None."""
        found = None
        for access in accesses:
            if found is None:
                found = self._check(access)
            shape = (access.origin, access.site, access.kind, access.op, access.dtype, access.spans)
            kept = self._shapes.get(shape)
            if kept is None:
                kept = self._shapes[shape] = deque(maxlen=_KEPT_PER_SHAPE)
            if access not in kept:
                kept.append(access)
        return found

    def clear(self) -> None:
        self._shapes.clear()

    def _check(self, new: Access) -> str | None:
        for (origin, _, _, _, _, spans), kept in self._shapes.items():
            if origin == new.origin or overlap(spans, new.spans) is None:
                continue
            for old in kept:
                why = conflict(old, new)
                if why is not None and not ordered(old, new) and not ordered(new, old):
                    return message(self.window, old, new, why)
        return None


def message(window: str, first: Access, second: Access, why: str) -> str:
    start, stop = overlap(first.spans, second.spans) or (0, 0)
    return (
        f"rma: RMA_CHECK: conflicting accesses to {window} on rank {second.target_rank}, bytes {start}-{stop - 1}, "
        f"that nothing orders: {describe(first)}; and {describe(second)}. {why[0].upper()}{why[1:]}: order them "
        "with a flush, unlock, fence or complete/wait (from different ranks, then a barrier or a message too)"
    )
