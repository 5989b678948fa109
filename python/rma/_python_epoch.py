"""An epoch whose exit makes the closing call through Python's method lookup.

rma._core.Epoch (the plain windows' epochs) calls the compiled closing call directly; the
window kinds that add Python to the closing calls (rma/check/, rma/separate.py) return this
instead, so that `with win.fence():` and the like reach their own closing calls.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["PythonEpoch"]


class PythonEpoch:
    """An open epoch: as a context manager, its exit makes the closing call (also after an exception)."""

    __slots__ = ("_window", "_close")

    def __init__(self, window: Any, close: Callable[[], object]) -> None:
        self._window, self._close = window, close

    def __enter__(self) -> Any:
        return self._window

    def __exit__(self, *exc_info: object) -> bool:
        self._close()
        return False
