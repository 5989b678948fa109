"""How the facade's buffer reductions combine arrays: element-wise with a predefined MPI.Op (a
NumPy ufunc), or through a user's Op.Create function over MPI.buffer objects, and a list of
every rank's contribution folded in rank order (MPI's order, which non-commutative ops need).

`fast_op` says when rma.Comm's compiled Allreduce/Reduce can do it instead (predefined op,
element type the core reduces): the facade's collectives prefer that path.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

import rma as _rma

from .errors import ERR_OP
from .errors import Exception as MPIException
from .memory import buffer

if TYPE_CHECKING:
    from .datatype import Datatype
    from .ops import Op

__all__: list[str] = []

# result[...] = invec OP inoutvec, for the predefined ops, by name.
_UFUNCS: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "MPI_SUM": np.add,
    "MPI_PROD": np.multiply,
    "MPI_MAX": np.maximum,
    "MPI_MIN": np.minimum,
    "MPI_LAND": np.logical_and,
    "MPI_LOR": np.logical_or,
    "MPI_LXOR": np.logical_xor,
    "MPI_BAND": np.bitwise_and,
    "MPI_BOR": np.bitwise_or,
    "MPI_BXOR": np.bitwise_xor,
    "MPI_REPLACE": lambda invec, inout: inout,
    "MPI_NO_OP": lambda invec, inout: invec,
}

# The core's reductions (src/core/elements/reduce.hpp) on the element kinds it takes: signed and
# unsigned integers and 4- and 8-byte floats; arithmetic and bitwise ops where MPI allows them.
_FAST_ARITHMETIC = {"MPI_SUM", "MPI_PROD", "MPI_MAX", "MPI_MIN"}
_FAST_BITWISE = {"MPI_BAND", "MPI_BOR", "MPI_BXOR"}


def fast_op(op: Op, dtype: np.dtype[Any]) -> _rma.Op | None:
    """The rma.Op the compiled array reductions take for `op` on `dtype`, or None (NumPy then)."""
    if op._rma is None:
        return None
    if dtype.kind in "iu" and dtype.itemsize in (1, 2, 4, 8):
        return op._rma if op._name in _FAST_ARITHMETIC or op._name in _FAST_BITWISE else None
    if dtype.kind == "f" and dtype.itemsize in (4, 8):
        return op._rma if op._name in _FAST_ARITHMETIC else None
    return None


def combine(op: Op, invec: np.ndarray, inoutvec: np.ndarray, datatype: Datatype | None, call: str) -> None:
    """inoutvec[...] = invec OP inoutvec, element-wise (MPI_User_function's contract)."""
    if op._function is not None and op._name == "user":
        # mpi4py's user function: function(inbuf, inoutbuf, datatype) over the bytes.
        inbuf = buffer.frombuffer(np.ascontiguousarray(invec).reshape(-1).view(np.uint8), readonly=True)
        op._function(inbuf, buffer.frombuffer(inoutvec.reshape(-1).view(np.uint8)), datatype)
        return
    ufunc = _UFUNCS.get(op._name)
    if ufunc is None:
        raise MPIException(ERR_OP, f"rma.compat: {call}: {op._name} does not combine buffers of {inoutvec.dtype}")
    if op._name in ("MPI_MAX", "MPI_MIN") and inoutvec.dtype.kind == "c":
        raise MPIException(ERR_OP, f"rma.compat: {call}: {op._name} does not order complex numbers")
    try:
        result = ufunc(invec, inoutvec)
    except TypeError:
        raise MPIException(
            ERR_OP, f"rma.compat: {call}: {op._name} does not combine elements of {inoutvec.dtype}"
        ) from None
    inoutvec[...] = result


def fold(op: Op, parts: list[np.ndarray], datatype: Datatype | None, call: str) -> np.ndarray:
    """parts[0] OP parts[1] OP ... in rank order (left to right), as a new array."""
    result = parts[0].copy()
    for part in parts[1:]:
        later = part.copy()
        combine(op, result, later, datatype, call)
        result = later
    return result
