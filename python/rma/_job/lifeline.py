"""A lifeline: a pipe whose write end only the process that started some workers holds.

Nothing is ever written to it. The workers watch the read end, whose end of file tells them
that their controller is gone, however it ended (even by SIGKILL): nobody is left to stop
them, so they stop themselves.
"""

from __future__ import annotations

import os
import select
import threading
from collections.abc import Callable

__all__ = ["Lifeline", "watch", "is_cut"]


class Lifeline:
    """Hold both ends of a lifeline in the controller; pass `read_end` to each worker."""

    def __init__(self) -> None:
        self.read_end, self._write_end = os.pipe()

    def close(self) -> None:
        """Close both ends (the workers still holding the read end see the end of file)."""
        os.close(self.read_end)
        os.close(self._write_end)


def watch(read_end: int, on_cut: Callable[[], None], name: str) -> None:
    """Call `on_cut()` from a daemon thread once the controller's end is closed (in a worker)."""
    # It may not reach processes the worker starts: the lifeline would outlive the worker.
    os.set_inheritable(read_end, False)

    def wait() -> None:
        try:
            while os.read(read_end, 1):
                pass
        except OSError:
            pass
        on_cut()

    threading.Thread(target=wait, name=name, daemon=True).start()


def is_cut(read_end: int, within: float = 0.0) -> bool:
    """Return True if the controller's end is closed, or closes within `within` seconds (in a
    worker). A controller that dies closes its descriptors one after another: a worker that
    saw another of them close first gives the lifeline a moment."""
    try:
        readable, _, _ = select.select([read_end], [], [], within)
        return bool(readable)
    except (OSError, ValueError):
        return True
