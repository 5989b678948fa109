"""This rank's vector clock: which calls of the job happened before which.

Entry r counts the times world rank r made known what it had done so far ("published": at a
barrier, a send, a fence, a post, a complete, an unlock...). Whatever a rank learns (a message,
a barrier, the clock an unlock left at a lock's target) it merges in. An access made by rank p
and completed at the target by p's call ``c`` (a flush, unlock, fence or complete) happened
before another rank's access whose clock, when it was made, already held p's entry at or above
the number of p's first publication after ``c``: the standard happens-before of vector clocks,
over RMA's completion rules.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["Clock", "clock", "start", "hand_out", "take_in"]


class Clock:
    """The vector clock of this process's rank; `now()` is an immutable tuple."""

    __slots__ = ("rank", "_entries", "_now", "tick")

    def __init__(self, rank: int, size: int) -> None:
        self.rank = rank
        self._entries = [0] * size
        self._now: tuple[int, ...] | None = None
        # Counts this rank's calls, in program order: orders the accesses of one origin.
        self.tick = 0

    def now(self) -> tuple[int, ...]:
        """Return the clock as it stands (the same tuple until the clock moves)."""
        if self._now is None:
            self._now = tuple(self._entries)
        return self._now

    def next_publication(self) -> int:
        """Return this rank's entry as its next publication will make it."""
        return self._entries[self.rank] + 1

    def publish(self) -> tuple[int, ...]:
        """Advance this rank's own entry and return the clock to hand on."""
        self._entries[self.rank] += 1
        self._now = None
        return self.now()

    def merge(self, other: Iterable[int]) -> None:
        """Take in what another rank's clock knows."""
        entries = self._entries
        moved = False
        for index, value in enumerate(other):
            if value > entries[index]:
                entries[index] = value
                moved = True
        if moved:
            self._now = None

    def merge_all(self, clocks: Iterable[Iterable[int]]) -> None:
        for other in clocks:
            self.merge(other)


_clock: Clock | None = None


def start(rank: int, size: int) -> None:
    """Make this rank's clock: rma.init() calls it as it makes the world communicator."""
    global _clock
    _clock = Clock(rank, size)


def clock() -> Clock:
    """Return this rank's clock."""
    assert _clock is not None, "rma.check: the clock is made by rma.init() under RMA_CHECK"
    return _clock


# Orders that rma does not see: rma.notebook's kernel runs a cell (or a pull) on every rank and
# sends the next one only once every rank is done, so the end of one cell on any rank happened
# before the next cell on every rank. The worker hands out its clock with each result and takes
# in the merge of all of them with the next command.


def hand_out() -> list[int] | None:
    """Publish this rank's clock for a channel outside rma; None when the checker is off."""
    return list(_clock.publish()) if _clock is not None else None


def take_in(other: Iterable[int] | None) -> None:
    """Take in a clock that came through a channel outside rma (nothing when the checker is off)."""
    if _clock is not None and other is not None:
        _clock.merge(other)
