"""Reduction ops, epoch modes, lock types and special ranks: the constants of the API.

The core defines them (src/bindings/register_constants.cpp builds the enum classes from its
own tables); this module re-exports them and adds what needs NumPy: each op called as a
function is its NumPy oracle (`rma.MAX(a, b)`).
"""

from __future__ import annotations

import numpy as np

from ._native import _core

__all__ = [
    "Op", "Mode", "LockType", "PROC_NULL", "LOCK_EXCLUSIVE", "LOCK_SHARED",
    "SUM", "PROD", "MIN", "MAX", "LAND", "LOR", "LXOR", "BAND", "BOR", "BXOR", "REPLACE", "NO_OP",
]  # fmt: skip

Op = _core.Op
Mode = _core.Mode
LockType = _core.LockType
# A target rank meaning "nobody": the call is a no-op that still needs its epoch.
PROC_NULL: int = _core.PROC_NULL
LOCK_EXCLUSIVE = LockType.EXCLUSIVE
LOCK_SHARED = LockType.SHARED
# The dtypes of the element types, in the core's order (accumulates take these).
ELEMENT_DTYPES: tuple[np.dtype, ...] = _core.ELEMENT_DTYPES

SUM = Op.SUM
PROD = Op.PROD
MIN = Op.MIN
MAX = Op.MAX
LAND = Op.LAND
LOR = Op.LOR
LXOR = Op.LXOR
BAND = Op.BAND
BOR = Op.BOR
BXOR = Op.BXOR
REPLACE = Op.REPLACE
NO_OP = Op.NO_OP

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


def _oracle(op: Op, current: object, operand: object) -> np.ndarray:
    """Return what the op makes of `current` and `operand` (NumPy semantics): an oracle."""
    return _ORACLES[op](np.asarray(current), np.asarray(operand))


Op.__call__ = _oracle
