"""This rank's vector clock under RMA_CHECK: which calls of the job happened before which.

The clock itself is compiled (src/core/check/vector_clock.hpp says what its entries mean), as
the windows' checkers read it at every call; these are its Python steps, for the calls that
order ranks in Python (check/comm.py, the clock board of check/window.py, the notebook).
"""

from __future__ import annotations

from collections.abc import Iterable

from .._native import _core

__all__ = ["start", "now", "publish", "merge", "merge_all", "meet", "hand_out", "take_in"]


def start(rank: int, size: int) -> None:
    """Make this rank's clock: rma.init() calls it as it makes the world communicator."""
    _core.check_clock_start(rank, size)


def now() -> list[int]:
    """Return the clock as it stands."""
    return _core.check_clock_now()


def publish() -> list[int]:
    """Advance this rank's own entry and return the clock to hand on."""
    return _core.check_clock_publish()


def merge(other: Iterable[int]) -> None:
    """Take in what another rank's clock knows."""
    _core.check_clock_merge(list(other))


def merge_all(clocks: Iterable[Iterable[int]]) -> None:
    """Take in what other ranks' clocks know."""
    _core.check_clock_merge_all([list(other) for other in clocks])


def meet(comm: _core.Communicator, call: str) -> None:
    """Publish this rank's clock and take in every member's: an allreduce (MAX) of the clocks,
    which orders like a barrier (no rank leaves it before every rank came)."""
    _core.check_clock_meet(comm, call)


# Orders that rma does not see: rma.notebook's kernel runs a cell (or a pull) on every rank and
# sends the next one only once every rank is done, so the end of one cell on any rank happened
# before the next cell on every rank. The worker hands out its clock with each result and takes
# in the merge of all of them with the next command.


def hand_out() -> list[int] | None:
    """Publish this rank's clock for a channel outside rma; None when the checker is off."""
    return publish() if _core.check_clock_running() else None


def take_in(other: Iterable[int] | None) -> None:
    """Take in a clock that came through a channel outside rma (nothing when the checker is off)."""
    if other is not None and _core.check_clock_running():
        merge(other)
