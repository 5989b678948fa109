"""The compiled core, loaded once: with Python's signal handlers kept, and a clear error.

Only what needs the core imports this module, so that rmarun, the rendezvous store and the
pytest plugin's controller start without loading libfabric (whose dependencies alone take
about 200 ms to load on Debian 12).
"""

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

__all__ = ["_core"]
