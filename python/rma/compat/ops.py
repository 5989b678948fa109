"""MPI.Op of the mpi4py facade: the predefined reductions and the user's (Op.Create).

A predefined op is three things: an rma.Op for windows and the compiled array reductions, a
NumPy combination for buffers (reductions.py), and mpi4py's function of two Python objects
(comm.allreduce(obj, op=MPI.MAX), MPI.MAX(x, y)). A user op is mpi4py's function(inbuf,
inoutbuf, datatype): called with MPI.buffer objects by the buffer reductions, and with
(x, y, None) on objects. As in mpi4py, at most 32 user ops exist at a time.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from typing import Any

import rma as _rma

from .errors import ERR_OP, ArgumentError
from .errors import Exception as MPIException

__all__ = [
    "Op",
    "OP_NULL",
    "MAX",
    "MIN",
    "SUM",
    "PROD",
    "LAND",
    "BAND",
    "LOR",
    "BOR",
    "LXOR",
    "BXOR",
    "MAXLOC",
    "MINLOC",
    "REPLACE",
    "NO_OP",
]

_MAX_USER_OPS = 32  # (mpi4py's limit: the C callbacks it has)
_user_lock = threading.Lock()
_user_slots: list[Any] = [None] * _MAX_USER_OPS  # the functions of the live user ops
_user_handles = itertools.count(1 << 20)  # user ops' handles, never reused
_live_users: dict[int, tuple[Callable[..., Any], bool]] = {}  # handle -> (function, commute)


class Op:
    """A reduction operation (MPI_Op)."""

    __slots__ = ("_rma", "_function", "_commute", "_name", "_handle", "_slot")

    def __init__(self, op: Op | None = None) -> None:
        source = op if op is not None else OP_NULL if "OP_NULL" in globals() else None
        if source is None:  # (OP_NULL itself)
            self._rma = self._function = None
            self._commute, self._name, self._handle, self._slot = True, "MPI_OP_NULL", 0, -1
            return
        if not isinstance(source, Op):
            raise TypeError(f"expected an Op, not {type(source).__name__}")
        self._rma, self._function, self._commute = source._rma, source._function, source._commute
        self._name, self._handle, self._slot = source._name, source._handle, source._slot

    @classmethod
    def _make(cls, name: str, handle: int, rma_op: _rma.Op | None, function: Callable[[Any, Any], Any]) -> Op:
        op = cls.__new__(cls)
        op._rma, op._function, op._commute, op._name = rma_op, function, True, name
        op._handle, op._slot = handle, -1
        return op

    @classmethod
    def Create(cls, function: Callable[..., Any], commute: bool = False) -> Op:  # noqa: N802 - mpi4py's names
        """A user reduction: function(inbuf, inoutbuf, datatype) stores inbuf OP inoutbuf into
        inoutbuf (MPI.buffer objects); on objects, function(x, y, None) returns the combination."""
        if not callable(function):
            raise TypeError(f"rma.compat: Op.Create: the function must be callable, not {type(function).__name__}")
        with _user_lock:
            try:
                slot = _user_slots.index(None)
            except ValueError:
                raise RuntimeError(
                    "rma.compat: Op.Create: cannot create too many user-defined reduction operations"
                ) from None
            _user_slots[slot] = function
            handle = next(_user_handles)
            _live_users[handle] = (function, bool(commute))
        op = cls._make("user", handle, None, function)
        op._commute, op._slot = bool(commute), slot
        return op

    def Free(self) -> None:  # noqa: N802
        """Free a user op (its slot can be taken again); this object becomes MPI.OP_NULL."""
        if self._name != "user":
            raise MPIException(ERR_OP, f"rma.compat: Op.Free: {self._name} is predefined, it cannot be freed")
        with _user_lock:
            if self._slot >= 0 and _user_slots[self._slot] is self._function:
                _user_slots[self._slot] = None
            _live_users.pop(self._handle, None)
        self._rma = self._function = None
        self._commute, self._name, self._handle, self._slot = True, "MPI_OP_NULL", 0, -1

    def free(self) -> None:
        """Free if a user op (predefined ones stay)."""
        if self._name == "user":
            self.Free()

    def Is_commutative(self) -> bool:  # noqa: N802
        return self._commute

    is_commutative = property(Is_commutative)

    @property
    def is_predefined(self) -> bool:
        return self._name != "user"

    def Reduce_local(self, inbuf: Any, inoutbuf: Any) -> None:  # noqa: N802
        """inoutbuf = inbuf OP inoutbuf, element-wise, in this process."""
        from .reductions import combine
        from .vector_specs import message

        call = "Op.Reduce_local"
        out = message(inoutbuf, writable=True, call=call, rank=0)
        into = message(inbuf, writable=False, call=call, rank=0)
        if out.counts[0] != into.counts[0]:
            raise ArgumentError(
                f"rma.compat: {call}: mismatch in inbuf count {into.counts[0]} and inoutbuf count {out.counts[0]}"
            )
        if out.datatype != into.datatype:
            raise ArgumentError(f"rma.compat: {call}: mismatch in inbuf and inoutbuf MPI datatypes")
        target = out.part(0, call)
        values = target.read()
        combine(self, into.part(0, call).read(), values, out.datatype, call)
        target.write(values)

    def __call__(self, x: Any, y: Any) -> Any:
        if self._name == "user":
            return self._function(x, y, None)  # type: ignore[misc]
        if self._function is None:
            raise ValueError("rma.compat: cannot call user-defined operation (MPI.OP_NULL)")
        return self._function(x, y)

    def _window_op(self, call: str) -> _rma.Op:
        """The rma.Op that a window call takes for this operation."""
        if self._rma is None:
            raise MPIException(
                ERR_OP, f"rma.compat: Win.{call}: {self._name} is not a predefined operation windows take"
            )
        return self._rma

    # ---- handles ----

    @property
    def handle(self) -> int:
        return self._handle

    def toint(self) -> int:
        return self._handle

    py2f = toint

    @classmethod
    def fromint(cls, handle: int) -> Op:
        """The op of an integer handle: a predefined one, or another object for a live user op
        (which, as mpi4py's, cannot be pickled: it was not made by Op.Create)."""
        for op in PREDEFINED:
            if op._handle == handle:
                return op
        if handle in _live_users:
            function, commute = _live_users[handle]
            op = cls._make("user", handle, None, function)
            op._commute = commute
            return op
        raise MPIException(ERR_OP, f"rma.compat: Op.fromint: {handle} is not the handle of an op")

    f2py = fromint
    fromhandle = fromint

    def __reduce__(self) -> str | tuple[Any, ...]:
        if self._name != "user":
            named = _BY_HANDLE[self._handle]
            if self is named:
                return named._name.removeprefix("MPI_")
            return (Op, (named,))
        if self._slot < 0:
            raise ValueError("rma.compat: cannot pickle user-defined reduction operation")
        return (Op.Create, (self._function, self._commute))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Op):
            return NotImplemented
        return self._handle == other._handle

    def __ne__(self, other: object) -> bool:
        if not isinstance(other, Op):
            return NotImplemented
        return self._handle != other._handle

    def __hash__(self) -> int:
        return hash((Op, self._handle))

    def __bool__(self) -> bool:
        return self._handle != 0

    def __repr__(self) -> str:
        return f"<MPI.Op {self._name}>"


# mpi4py's functions of two objects for the predefined ops.


def _max(x: Any, y: Any) -> Any:
    return y if y > x else x


def _min(x: Any, y: Any) -> Any:
    return y if y < x else x


def _maxloc(x: Any, y: Any) -> Any:
    (u, i), (v, j) = x, y
    if u > v:
        return u, i
    if v > u or j < i:
        return v, j
    return u, i


def _minloc(x: Any, y: Any) -> Any:
    (u, i), (v, j) = x, y
    if u < v:
        return u, i
    if v < u or j < i:
        return v, j
    return u, i


OP_NULL = Op()
MAX = Op._make("MPI_MAX", 1, _rma.MAX, _max)
MIN = Op._make("MPI_MIN", 2, _rma.MIN, _min)
SUM = Op._make("MPI_SUM", 3, _rma.SUM, lambda x, y: x + y)
PROD = Op._make("MPI_PROD", 4, _rma.PROD, lambda x, y: x * y)
LAND = Op._make("MPI_LAND", 5, _rma.LAND, lambda x, y: bool(x) & bool(y))
BAND = Op._make("MPI_BAND", 6, _rma.BAND, lambda x, y: x & y)
LOR = Op._make("MPI_LOR", 7, _rma.LOR, lambda x, y: bool(x) | bool(y))
BOR = Op._make("MPI_BOR", 8, _rma.BOR, lambda x, y: x | y)
LXOR = Op._make("MPI_LXOR", 9, _rma.LXOR, lambda x, y: bool(x) ^ bool(y))
BXOR = Op._make("MPI_BXOR", 10, _rma.BXOR, lambda x, y: x ^ y)
# (value, index) pairs: the object calls take them; windows and buffers do not (no pair datatypes).
MAXLOC = Op._make("MPI_MAXLOC", 11, None, _maxloc)
MINLOC = Op._make("MPI_MINLOC", 12, None, _minloc)
REPLACE = Op._make("MPI_REPLACE", 13, _rma.REPLACE, lambda x, y: y)
NO_OP = Op._make("MPI_NO_OP", 14, _rma.NO_OP, lambda x, y: x)

PREDEFINED = [OP_NULL, MAX, MIN, SUM, PROD, LAND, BAND, LOR, BOR, LXOR, BXOR, MAXLOC, MINLOC, REPLACE, NO_OP]
_BY_HANDLE = {op._handle: op for op in PREDEFINED}
