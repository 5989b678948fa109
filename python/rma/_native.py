"""The compiled core, loaded once: with Python's signal handlers kept, and a clear error.

Only what needs the core imports this module, so that rmarun, the rendezvous store and the
pytest plugin's controller start without loading libfabric (whose dependencies alone take
about 200 ms to load on Debian 12).
"""

import threading

from ._signals import keep_python_signal_handlers

try:
    with keep_python_signal_handlers():
        from . import _core
except ImportError as error:  # pragma: no cover - depends on the installation
    raise ImportError(
        "rma: the compiled extension rma._core is missing or broken "
        f"({error}). Build and install the package with `pip install .` "
        "(it needs `apt-get install libfabric-dev pkg-config` first)."
    ) from error

# A SIGINT now also interrupts a blocking rma call (which runs without the GIL): the call ends
# and Python's handler runs (KeyboardInterrupt, usually). Main thread only, like signals.
if threading.current_thread() is threading.main_thread():
    _core.chain_interrupt_handler()

__all__ = ["_core"]
