"""MPI.Exception and the error classes of the mpi4py facade.

rma raises its own exceptions (rma.EpochError, rma.TargetRangeError, TypeError...); a program
written for mpi4py catches MPI.Exception and asks its error class. The facade turns rma's
exception into an MPI.Exception that keeps rma's text, so nothing of the explanation is lost.
"""

from __future__ import annotations

import builtins
import traceback
from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar

from .. import errors as _rma_errors

# The error classes of the MPI standard, with MPICH's numbers (a program compares them only
# with each other and with SUCCESS).
# What MPI.py takes (its star import): the error classes and calls of mpi4py's MPI, not this
# module's helpers. (The ERR_* names are collected at the end of the module.)
_CALLS = [
    "SUCCESS",
    "Exception",
    "Get_error_class",
    "Get_error_string",
    "Add_error_class",
    "Add_error_code",
    "Add_error_string",
    "Remove_error_class",
    "Remove_error_code",
    "Remove_error_string",
]

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
ERR_ERRHANDLER = 102
ERR_LASTCODE = 0x3FFFFFFF

# What Get_error_string says of each predefined class (the facade's words; a program shows it).
_STRINGS = {
    SUCCESS: "no error",
    ERR_BUFFER: "invalid buffer pointer",
    ERR_COUNT: "invalid count argument",
    ERR_TYPE: "invalid datatype",
    ERR_TAG: "invalid tag",
    ERR_COMM: "invalid communicator",
    ERR_RANK: "invalid rank",
    ERR_ROOT: "invalid root",
    ERR_TRUNCATE: "message truncated",
    ERR_GROUP: "invalid group",
    ERR_OP: "invalid reduce operation",
    ERR_REQUEST: "invalid request",
    ERR_TOPOLOGY: "invalid topology",
    ERR_DIMS: "invalid dimension argument",
    ERR_ARG: "invalid argument of some other kind",
    ERR_OTHER: "other error",
    ERR_UNKNOWN: "unknown error",
    ERR_INTERN: "internal error",
    ERR_IN_STATUS: "error code is in status",
    ERR_PENDING: "pending request",
    ERR_INFO: "invalid info object",
    ERR_INFO_KEY: "invalid info key",
    ERR_INFO_VALUE: "invalid info value",
    ERR_INFO_NOKEY: "no such key in the info object",
    ERR_KEYVAL: "invalid keyval",
    ERR_NO_MEM: "out of memory",
    ERR_BASE: "invalid base address",
    ERR_WIN: "invalid window",
    ERR_SIZE: "invalid size",
    ERR_DISP: "invalid displacement",
    ERR_LOCKTYPE: "invalid lock type",
    ERR_ASSERT: "invalid assertion",
    ERR_RMA_CONFLICT: "conflicting accesses to a window",
    ERR_RMA_SYNC: "wrong synchronization of RMA calls",
    ERR_RMA_RANGE: "target memory is not part of the window",
    ERR_RMA_ATTACH: "memory cannot be attached",
    ERR_RMA_SHARED: "memory cannot be shared",
    ERR_RMA_FLAVOR: "passed window has the wrong flavor for the called function",
    ERR_NOT_SAME: "collective argument not identical on all processes",
    ERR_UNSUPPORTED_OPERATION: "unsupported operation",
    ERR_PROC_FAILED: "a process has failed",
    ERR_ERRHANDLER: "invalid error handler",
    ERR_LASTCODE: "last error code",
}

# The program's own error classes and codes (Add_error_class, Add_error_code): code -> its
# class (a class is its own), and the strings Add_error_string gave them. Numbers go up from
# ERR_LASTCODE, as MPI's LASTUSEDCODE attribute reports.
_user_class: dict[int, int] = {}
_user_string: dict[int, str] = {}
_last_used = [ERR_LASTCODE]


def Get_error_class(errorcode: int) -> int:  # noqa: N802 - mpi4py's names
    """The error class of an error code: a predefined class is its own; a program's code is
    the class it was added to; anything else is MPI.ERR_UNKNOWN."""
    code = int(errorcode)
    if code in _user_class:
        return _user_class[code]
    return code if SUCCESS <= code <= ERR_LASTCODE else ERR_UNKNOWN


def Get_error_string(errorcode: int) -> str:  # noqa: N802
    """The text of an error code or class ("" for a program's own until Add_error_string)."""
    code = int(errorcode)
    if code in _user_class:
        return _user_string.get(code, "")
    if code in _STRINGS:
        return _STRINGS[code]
    return f"error code {code}" if SUCCESS <= code <= ERR_LASTCODE else "unknown error"


def Add_error_class() -> int:  # noqa: N802
    """A new error class of the program's (local to this process, as MPI's are)."""
    _last_used[0] += 1
    _user_class[_last_used[0]] = _last_used[0]
    return _last_used[0]


def Add_error_code(errorclass: int) -> int:  # noqa: N802
    """A new error code of class `errorclass` (a predefined class or one of the program's)."""
    errorclass = int(errorclass)
    if not (SUCCESS < errorclass <= ERR_LASTCODE or _user_class.get(errorclass) == errorclass):
        raise Exception(ERR_ARG, f"rma.compat: MPI.Add_error_code: {errorclass} is not an error class")
    _last_used[0] += 1
    _user_class[_last_used[0]] = errorclass
    return _last_used[0]


def Add_error_string(errorcode: int, string: str) -> None:  # noqa: N802
    """Give a program's error class or code its text."""
    _users("Add_error_string", errorcode)
    _user_string[int(errorcode)] = str(string)


def Remove_error_class(errorclass: int) -> None:  # noqa: N802
    """Remove a program's error class: it must have no codes and no string left."""
    code = _users("Remove_error_class", errorclass)
    if _user_class[code] != code:
        raise Exception(ERR_ARG, f"rma.compat: MPI.Remove_error_class: {code} is an error code, not a class")
    if code in _user_string or any(c != code and k == code for c, k in _user_class.items()):
        raise Exception(ERR_ARG, f"rma.compat: MPI.Remove_error_class: {code} still has codes or a string")
    del _user_class[code]


def Remove_error_code(errorcode: int) -> None:  # noqa: N802
    """Remove a program's error code: it must have no string left."""
    code = _users("Remove_error_code", errorcode)
    if _user_class[code] == code or code in _user_string:
        raise Exception(ERR_ARG, f"rma.compat: MPI.Remove_error_code: {code} is a class or still has a string")
    del _user_class[code]


def Remove_error_string(errorcode: int) -> None:  # noqa: N802
    """Remove the text Add_error_string gave a program's class or code."""
    _users("Remove_error_string", errorcode)
    _user_string.pop(int(errorcode), None)


def run_callback(function: Any, args: tuple, call: str) -> Any:
    """Run a program's callback (a keyval's copy or delete function, a generalized request's
    query, free or cancel function) as mpi4py does, where the callback runs inside MPI, which
    knows only error codes: its exception is shown on stderr with its traceback and the call
    fails with its MPI.Exception's class, or with MPI.ERR_OTHER for any other exception."""
    try:
        return function(*args)
    except builtins.Exception as exc:
        traceback.print_exc()
        code = exc.Get_error_class() if isinstance(exc, Exception) else ERR_OTHER
        raise Exception(code, f"rma.compat: {call}: the program's callback raised {type(exc).__name__}: {exc}") from exc


def last_used_code() -> int:
    """The largest error code in use: MPI.LASTUSEDCODE's value."""
    return _last_used[0]


def _users(call: str, errorcode: int) -> int:
    code = int(errorcode)
    if code not in _user_class:
        raise Exception(ERR_ARG, f"rma.compat: MPI.{call}: {code} is not an error class or code of the program's")
    return code


class Exception(builtins.RuntimeError):  # noqa: A001 - mpi4py's name: MPI.Exception
    """An MPI error: its error code and class (MPI.ERR_*) and, when rma raised it, rma's
    explanation as its text. It compares and converts as the integer code, as mpi4py's does."""

    error_code: int
    error_class: int
    error_string: str

    def __init__(self, ierr: int = SUCCESS, message: str = "") -> None:
        code = int(ierr)
        if code < SUCCESS:
            code = ERR_UNKNOWN  # (mpi4py's rule for a negative code)
        self.error_code = code
        self.error_class = Get_error_class(code)
        self.error_string = message or Get_error_string(code)
        super().__init__(self.error_string)

    def Get_error_class(self) -> int:  # noqa: N802 - mpi4py's names
        return self.error_class

    def Get_error_code(self) -> int:  # noqa: N802
        return self.error_code

    def Get_error_string(self) -> str:  # noqa: N802
        return self.error_string

    def __repr__(self) -> str:
        return f"MPI.Exception({self.error_code})"

    def __str__(self) -> str:
        return self.error_string

    def __bool__(self) -> bool:
        return self.error_code != SUCCESS

    def __int__(self) -> int:
        return self.error_code

    def __hash__(self) -> int:
        return hash(self.error_code)

    def __eq__(self, other: object) -> bool:
        return self.error_code == _code(other) if _code(other) is not None else NotImplemented

    def __ne__(self, other: object) -> bool:
        return self.error_code != _code(other) if _code(other) is not None else NotImplemented

    def __lt__(self, other: object) -> bool:
        return self.error_code < _code(other) if _code(other) is not None else NotImplemented

    def __le__(self, other: object) -> bool:
        return self.error_code <= _code(other) if _code(other) is not None else NotImplemented

    def __gt__(self, other: object) -> bool:
        return self.error_code > _code(other) if _code(other) is not None else NotImplemented

    def __ge__(self, other: object) -> bool:
        return self.error_code >= _code(other) if _code(other) is not None else NotImplemented


def _code(value: object) -> int | None:
    if isinstance(value, Exception):
        return value.error_code
    return value if isinstance(value, int) else None


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


__all__ = _CALLS + sorted(name for name in list(globals()) if name.startswith("ERR_"))
