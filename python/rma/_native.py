"""The compiled core, loaded once, with a clear error when it cannot be.

Only what needs the core imports this module, so that rmarun, the rendezvous store and the
pytest plugin's controller start without loading it. (The core loads libfabric itself, only
for a job that needs it, and keeps the process's signal handlers across that:
src/core/fabric/libfabric_library.cpp.)
"""

import threading

try:
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
