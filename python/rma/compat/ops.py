"""MPI.Op of the mpi4py facade: the predefined reductions, each an rma.Op for windows and a
Python function of two objects for the object collectives (comm.allreduce(obj, op=MPI.MAX))."""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import rma as _rma

from .errors import ERR_OP
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


class Op:
    """A reduction operation (MPI_Op)."""

    __slots__ = ("_rma", "_function", "_commute", "_name")

    def __init__(self, op: Op | None = None) -> None:
        self._rma = op._rma if op is not None else None
        self._function = op._function if op is not None else None
        self._commute = op._commute if op is not None else True
        self._name = op._name if op is not None else "MPI_OP_NULL"

    @classmethod
    def _make(cls, name: str, rma_op: _rma.Op | None, function: Callable[[Any, Any], Any] | None) -> Op:
        op = cls.__new__(cls)
        op._rma, op._function, op._commute, op._name = rma_op, function, True, name
        return op

    @classmethod
    def Create(cls, function: Callable[..., Any], commute: bool = False) -> Op:  # noqa: N802 - mpi4py's names
        """A user reduction for the object collectives: function(a, b) returns the combination.
        (mpi4py's buffer form function(inbuf, inoutbuf, datatype) is not taken: windows accept
        only the predefined operations, as MPI's accumulate does.)"""
        op = cls._make("user", None, function)
        op._commute = bool(commute)
        return op

    def Free(self) -> None:  # noqa: N802
        self._rma = self._function = None
        self._name = "MPI_OP_NULL"

    def Is_commutative(self) -> bool:  # noqa: N802
        return self._commute

    is_commutative = property(Is_commutative)

    @property
    def is_predefined(self) -> bool:
        return self._rma is not None

    def __call__(self, x: Any, y: Any) -> Any:
        if self._function is None:
            raise MPIException(ERR_OP, f"rma.compat: {self._name} cannot combine objects")
        return self._function(x, y)

    def _window_op(self, call: str) -> _rma.Op:
        """The rma.Op that a window call takes for this operation."""
        if self._rma is None:
            raise MPIException(
                ERR_OP, f"rma.compat: Win.{call}: {self._name} is not a predefined operation windows take"
            )
        return self._rma

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Op):
            return NotImplemented
        return self._name == other._name and self._function is other._function

    def __hash__(self) -> int:
        return hash(self._name)

    def __bool__(self) -> bool:
        return self._name != "MPI_OP_NULL"

    def __repr__(self) -> str:
        return f"<MPI.Op {self._name}>"


def _logical(function: Callable[[bool, bool], bool]) -> Callable[[Any, Any], Any]:
    return lambda x, y: function(bool(x), bool(y))


def _replace(x: Any, y: Any) -> Any:
    return y


def _no_op(x: Any, y: Any) -> Any:
    return x


OP_NULL = Op()
SUM = Op._make("MPI_SUM", _rma.SUM, operator.add)
PROD = Op._make("MPI_PROD", _rma.PROD, operator.mul)
MAX = Op._make("MPI_MAX", _rma.MAX, max)
MIN = Op._make("MPI_MIN", _rma.MIN, min)
LAND = Op._make("MPI_LAND", _rma.LAND, _logical(lambda a, b: a and b))
LOR = Op._make("MPI_LOR", _rma.LOR, _logical(lambda a, b: a or b))
LXOR = Op._make("MPI_LXOR", _rma.LXOR, _logical(operator.xor))
BAND = Op._make("MPI_BAND", _rma.BAND, operator.and_)
BOR = Op._make("MPI_BOR", _rma.BOR, operator.or_)
BXOR = Op._make("MPI_BXOR", _rma.BXOR, operator.xor)
REPLACE = Op._make("MPI_REPLACE", _rma.REPLACE, _replace)
NO_OP = Op._make("MPI_NO_OP", _rma.NO_OP, _no_op)
# (value, index) pairs: the object collectives take them; windows do not (no pair datatypes).
MAXLOC = Op._make("MPI_MAXLOC", None, lambda x, y: max(x, y, key=lambda pair: (pair[0], -pair[1])))
MINLOC = Op._make("MPI_MINLOC", None, lambda x, y: min(x, y, key=lambda pair: (pair[0], pair[1])))

PREDEFINED = [SUM, PROD, MAX, MIN, LAND, LOR, LXOR, BAND, BOR, BXOR, REPLACE, NO_OP, MAXLOC, MINLOC]
