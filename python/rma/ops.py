"""Reduction ops, epoch modes, lock types and special ranks: the constants of the API."""

from __future__ import annotations

import enum

import numpy as np

__all__ = ["Op", "Mode", "PROC_NULL", "LOCK_EXCLUSIVE", "LOCK_SHARED", "element_type", "check_op"]

OP_NAMES = ("SUM", "PROD", "MIN", "MAX", "LAND", "LOR", "LXOR", "BAND", "BOR", "BXOR", "REPLACE", "NO_OP")

# A target rank meaning "nobody": the call is a no-op that still needs its epoch.
PROC_NULL = -2

LOCK_EXCLUSIVE = 1
LOCK_SHARED = 2


class Op(enum.IntEnum):
    """The operations of accumulate, get_accumulate and fetch_and_op."""

    SUM = 0
    PROD = 1
    MIN = 2
    MAX = 3
    LAND = 4
    LOR = 5
    LXOR = 6
    BAND = 7
    BOR = 8
    BXOR = 9
    REPLACE = 10
    NO_OP = 11

    def __call__(self, current, operand):
        """Return what the op makes of `current` and `operand` (NumPy semantics): an oracle."""
        return _ORACLES[self](np.asarray(current), np.asarray(operand))


_ORACLES = {
    Op.SUM: np.add,
    Op.PROD: np.multiply,
    Op.MIN: np.minimum,
    Op.MAX: np.maximum,
    Op.LAND: lambda a, b: np.logical_and(a, b).astype(a.dtype),
    Op.LOR: lambda a, b: np.logical_or(a, b).astype(a.dtype),
    Op.LXOR: lambda a, b: np.logical_xor(a, b).astype(a.dtype),
    Op.BAND: np.bitwise_and,
    Op.BOR: np.bitwise_or,
    Op.BXOR: np.bitwise_xor,
    Op.REPLACE: lambda a, b: np.broadcast_to(b, np.broadcast(a, b).shape).astype(a.dtype),
    Op.NO_OP: lambda a, b: a.copy(),
}


# rma.SUM etc.
globals().update({name: Op[name] for name in OP_NAMES})


class Mode(enum.IntFlag):
    """Assertions for fence, post, start and lock (MPI_MODE_*); combine with |."""

    NOCHECK = 1
    NOSTORE = 2
    NOPUT = 4
    NOPRECEDE = 8
    NOSUCCEED = 16


# NumPy dtype -> the core's element type (window/reduce.hpp, ElementType).
_ELEMENT_TYPES = {
    np.dtype(np.bool_): 0,
    np.dtype(np.int8): 1,
    np.dtype(np.uint8): 2,
    np.dtype(np.int16): 3,
    np.dtype(np.uint16): 4,
    np.dtype(np.int32): 5,
    np.dtype(np.uint32): 6,
    np.dtype(np.int64): 7,
    np.dtype(np.uint64): 8,
    np.dtype(np.float32): 9,
    np.dtype(np.float64): 10,
    np.dtype(np.complex64): 11,
    np.dtype(np.complex128): 12,
}
BYTES_TYPE = 13  # any other fixed-size dtype: put and get only
# The dtype objects of the element types, in their order: NumPy makes arrays of these dtypes
# point at these very objects, which lets the core's fast path recognise a dtype by identity.
ELEMENT_DTYPES = sorted(_ELEMENT_TYPES, key=_ELEMENT_TYPES.__getitem__)
_CANONICAL = {dtype: dtype for dtype in _ELEMENT_TYPES}


def canonical_dtype(dtype: np.dtype) -> np.dtype:
    """Return the element type's own dtype object if `dtype` equals one (e.g. once unpickled)."""
    return _CANONICAL.get(dtype, dtype)


_INTEGERS = {np.dtype(t) for t in (np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64)}
_FLOATS = {np.dtype(np.float32), np.dtype(np.float64)}
_COMPLEX = {np.dtype(np.complex64), np.dtype(np.complex128)}
_BOOL = {np.dtype(np.bool_)}
_ALLOWED = {
    Op.SUM: _INTEGERS | _FLOATS | _COMPLEX,
    Op.PROD: _INTEGERS | _FLOATS | _COMPLEX,
    Op.MIN: _INTEGERS | _FLOATS,
    Op.MAX: _INTEGERS | _FLOATS,
    Op.LAND: _INTEGERS | _BOOL,
    Op.LOR: _INTEGERS | _BOOL,
    Op.LXOR: _INTEGERS | _BOOL,
    Op.BAND: _INTEGERS,
    Op.BOR: _INTEGERS,
    Op.BXOR: _INTEGERS,
    Op.REPLACE: set(_ELEMENT_TYPES),
    Op.NO_OP: set(_ELEMENT_TYPES),
}
COMPARE_TYPES = _INTEGERS | _BOOL


def element_type(dtype: np.dtype) -> int:
    """Return the core's element type code of `dtype` (BYTES_TYPE for others)."""
    return _ELEMENT_TYPES.get(np.dtype(dtype), BYTES_TYPE)


def check_op(op: object, dtype: np.dtype, call: str) -> Op:
    """Return `op` as an Op if it applies to `dtype`, else raise TypeError naming the call."""
    try:
        op = Op(op)
    except ValueError:
        raise TypeError(f"rma: win.{call}: {op!r} is not an rma.Op") from None
    if np.dtype(dtype) not in _ALLOWED[op]:
        raise TypeError(f"rma: win.{call}: {op.name} does not apply to {np.dtype(dtype)}")
    return op
