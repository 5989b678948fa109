"""rma: MPI-style one-sided communication (remote memory access) for Python.

Start ranks with ``rmarun -n 4 script.py``; in each, ``comm = rma.init()`` joins the job.
See the README for the API and the configuration variables.
"""

from __future__ import annotations

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

from ._runtime import finalize, init, is_initialized
from .comm import Comm
from .errors import (
    BootstrapError,
    EpochError,
    FabricError,
    PeerError,
    RMAError,
    RMATimeoutError,
    TargetRangeError,
)
from .group import Group

__version__ = "0.1.0"

__all__ = [
    "init",
    "finalize",
    "is_initialized",
    "Comm",
    "Group",
    "RMAError",
    "EpochError",
    "TargetRangeError",
    "PeerError",
    "FabricError",
    "BootstrapError",
    "RMATimeoutError",
]
