"""Keep Python's signal handlers across loading the extension.

Debian's libfabric pulls in libinfinipath (for its psm provider), whose constructor installs
its own handlers for SIGINT, SIGTERM, SIGSEGV and SIGBUS when the library is loaded. Ctrl-C
would then end the process with status 1 instead of raising KeyboardInterrupt, and a crash
would not show as one. We put back what Python had.
"""

from __future__ import annotations

import contextlib
import faulthandler
import signal
import sys
import threading
from collections.abc import Iterator

_TAKEN = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGSEGV", "SIGBUS") if hasattr(signal, name))


@contextlib.contextmanager
def keep_python_signal_handlers() -> Iterator[None]:
    """Restore, on exit, the signal handlers Python had on entry (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield  # signal.signal works in the main thread only; nothing we can restore
        return
    before = {number: signal.getsignal(number) for number in _TAKEN}
    faulthandler_on = faulthandler.is_enabled()
    try:
        yield
    finally:
        for number, handler in before.items():
            # None: installed outside Python; SIG_DFL is then the closest we can give back.
            signal.signal(number, signal.SIG_DFL if handler is None else handler)
        if faulthandler_on:
            # faulthandler's own handlers were replaced too: install them again.
            faulthandler.disable()
            faulthandler.enable(file=sys.__stderr__, all_threads=True)
