"""Signals that reach rmarun while a job runs or a store serves: events on a queue."""

from __future__ import annotations

import queue
import signal
import threading

__all__ = ["SignalForwarder"]


class SignalForwarder:
    """Turn SIGINT/SIGTERM/SIGHUP into events on a queue while a job runs.

    The handler only puts onto a SimpleQueue, which is safe to call from a
    signal handler, so the main loop handles signals like any other event.
    """

    SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

    def __init__(self, events: queue.SimpleQueue):
        self._events = events
        self._saved: dict[int, object] = {}

    def __enter__(self) -> SignalForwarder:
        # signal.signal only works in the main thread; elsewhere (main()
        # called from a thread) rmarun simply does not catch signals.
        if threading.current_thread() is threading.main_thread():
            for sig in self.SIGNALS:
                self._saved[sig] = signal.signal(sig, self._handle)
        return self

    def _handle(self, signum, frame) -> None:
        self._events.put(("signal", signum, None))

    def __exit__(self, *exc_info) -> None:
        for sig, handler in self._saved.items():
            signal.signal(sig, handler)
