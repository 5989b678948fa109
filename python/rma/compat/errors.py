"""MPI.Exception and the error classes of the mpi4py facade.

rma raises its own exceptions (rma.EpochError, rma.TargetRangeError, TypeError...); a program
written for mpi4py catches MPI.Exception and asks its error class. The facade turns rma's
exception into an MPI.Exception that keeps rma's text, so nothing of the explanation is lost.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar

from .. import errors as _rma_errors

# The error classes of the MPI standard, with MPICH's numbers (a program compares them only
# with each other and with SUCCESS).
SUCCESS = 0
ERR_BUFFER = 1
ERR_COUNT = 2
ERR_TYPE = 3
ERR_TAG = 4
ERR_COMM = 5
ERR_RANK = 6
ERR_ROOT = 7
ERR_TRUNCATE = 14
ERR_GROUP = 8
ERR_OP = 9
ERR_REQUEST = 19
ERR_TOPOLOGY = 10
ERR_DIMS = 11
ERR_ARG = 12
ERR_OTHER = 15
ERR_UNKNOWN = 13
ERR_INTERN = 16
ERR_IN_STATUS = 17
ERR_PENDING = 18
ERR_INFO = 28
ERR_INFO_KEY = 29
ERR_INFO_VALUE = 30
ERR_INFO_NOKEY = 31
ERR_KEYVAL = 48
ERR_NO_MEM = 34
ERR_BASE = 46
ERR_WIN = 45
ERR_SIZE = 51
ERR_DISP = 52
ERR_LOCKTYPE = 47
ERR_ASSERT = 53
ERR_RMA_CONFLICT = 49
ERR_RMA_SYNC = 50
ERR_RMA_RANGE = 55
ERR_RMA_ATTACH = 56
ERR_RMA_SHARED = 57
ERR_RMA_FLAVOR = 58
ERR_NOT_SAME = 35
ERR_UNSUPPORTED_OPERATION = 44
ERR_PROC_FAILED = 101
ERR_LASTCODE = 0x3FFFFFFF

_NAMES = {value: name for name, value in globals().items() if name.startswith(("ERR_", "SUCCESS"))}


class Exception(builtins.RuntimeError):  # noqa: A001 - mpi4py's name: MPI.Exception
    """An MPI error: its error class (MPI.ERR_*) and rma's explanation."""

    def __init__(self, error_class: int = ERR_OTHER, message: str = "") -> None:
        super().__init__(message or _NAMES.get(error_class, "MPI error"))
        self.error_class = int(error_class)
        self.error_code = int(error_class)
        self.error_string = message or _NAMES.get(error_class, "MPI error")

    def Get_error_class(self) -> int:  # noqa: N802 - mpi4py's names
        return self.error_class

    def Get_error_code(self) -> int:  # noqa: N802
        return self.error_code

    def Get_error_string(self) -> str:  # noqa: N802
        return self.error_string

    def __eq__(self, other: object) -> bool:
        if isinstance(other, int):
            return self.error_code == other
        return builtins.Exception.__eq__(self, other)

    def __hash__(self) -> int:
        return hash(self.error_code)

    def __int__(self) -> int:
        return self.error_code


class ArgumentError(ValueError):
    """A buffer or count that mpi4py itself refuses before calling MPI (a ValueError there too)."""


def error_class_of(exc: BaseException) -> int:
    """The MPI error class closest to what an rma exception says."""
    text = str(exc)
    if isinstance(exc, _rma_errors.TargetRangeError):
        return ERR_RMA_RANGE
    if isinstance(exc, _rma_errors.EpochError):
        return ERR_RMA_SYNC
    if isinstance(exc, _rma_errors.PeerError):
        return ERR_PROC_FAILED
    if isinstance(exc, _rma_errors.OutOfMemoryError):
        return ERR_NO_MEM
    if "rank" in text and ("outside" in text or "out of range" in text or "not a rank" in text):
        return ERR_RANK
    if isinstance(exc, TypeError):
        return ERR_TYPE if ("dtype" in text or "datatype" in text) else ERR_ARG
    if isinstance(exc, ValueError):
        return ERR_ARG
    return ERR_OTHER


# What a facade call turns into MPI.Exception: rma's own errors and its argument checks.
TRANSLATED = (_rma_errors.RMAError, TypeError, ValueError, IndexError)


def as_mpi(exc: BaseException) -> BaseException:
    """The exception a facade call raises for `exc`: MPI.Exception with rma's text, except
    for the facade's own MPI.Exception and ArgumentError (mpi4py's ValueError), kept as they are."""
    if isinstance(exc, (Exception, ArgumentError)):
        return exc
    return Exception(error_class_of(exc), str(exc))


_F = TypeVar("_F", bound=Callable[..., Any])


def translated(function: _F) -> _F:
    """Wrap a facade call so that rma's errors come out as MPI.Exception (as_mpi)."""

    @wraps(function)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)
        except TRANSLATED as exc:
            if exc.__traceback__ is not None and exc.__traceback__.tb_next is None:
                raise  # (the arguments did not fit the call's signature: Python's TypeError, as in mpi4py)
            raise as_mpi(exc) from None

    return call  # type: ignore[return-value]
