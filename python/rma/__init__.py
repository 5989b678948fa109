"""rma: MPI-style one-sided communication (remote memory access) for Python.

Start ranks with ``rmarun -n 4 script.py``; in each, ``comm = rma.init()`` joins the job.
See the README for the API and the configuration variables.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .errors import (
    BootstrapError,
    ConflictError,
    EpochError,
    FabricError,
    OutOfMemoryError,
    PeerError,
    RMAError,
    RMATimeoutError,
    TargetRangeError,
)
from .group import Group

__version__ = "0.1.0"

if TYPE_CHECKING:  # what type checkers see of the lazy names below (tests/test_typing.py keeps both in step)
    from . import sync
    from ._job.info import info
    from ._job.join import finalize, init, is_initialized
    from .comm import ANY_SOURCE, ANY_TAG, Comm, MessageRequest, Status
    from .ops import (
        BAND,
        BOR,
        BXOR,
        LAND,
        LOCK_EXCLUSIVE,
        LOCK_SHARED,
        LOR,
        LXOR,
        MAX,
        MIN,
        NO_OP,
        PROC_NULL,
        PROD,
        REPLACE,
        SUM,
        LockType,
        Mode,
        Op,
    )
    from .window import Request, Window

# Names whose modules load the compiled core: imported on first use (see _native.py).
_LAZY = {
    "init": "._job.join",
    "finalize": "._job.join",
    "is_initialized": "._job.join",
    "info": "._job.info",
    "Comm": ".comm",
    "Status": ".comm",
    "MessageRequest": ".comm",
    "ANY_SOURCE": ".comm",
    "ANY_TAG": ".comm",
    "Window": ".window",
    "Request": ".window",
    "sync": ".sync",
    "Op": ".ops",
    "Mode": ".ops",
    "LockType": ".ops",
    "PROC_NULL": ".ops",
    "LOCK_EXCLUSIVE": ".ops",
    "LOCK_SHARED": ".ops",
    **{
        name: ".ops"
        for name in ("SUM", "PROD", "MIN", "MAX", "LAND", "LOR", "LXOR", "BAND", "BOR", "BXOR", "REPLACE", "NO_OP")
    },
}

__all__ = [
    "init",
    "finalize",
    "is_initialized",
    "info",
    "Comm",
    "Status",
    "MessageRequest",
    "ANY_SOURCE",
    "ANY_TAG",
    "Group",
    "Window",
    "Request",
    "sync",
    "Op",
    "Mode",
    "LockType",
    "PROC_NULL",
    "LOCK_EXCLUSIVE",
    "LOCK_SHARED",
    "SUM",
    "PROD",
    "MIN",
    "MAX",
    "LAND",
    "LOR",
    "LXOR",
    "BAND",
    "BOR",
    "BXOR",
    "REPLACE",
    "NO_OP",
    "RMAError",
    "EpochError",
    "TargetRangeError",
    "PeerError",
    "FabricError",
    "BootstrapError",
    "RMATimeoutError",
    "OutOfMemoryError",
    "ConflictError",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'rma' has no attribute {name!r}")
    loaded = importlib.import_module(module, __name__)
    value = loaded if module == "." + name else getattr(loaded, name)  # rma.sync is a module
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
