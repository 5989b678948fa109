"""The predefined MPI datatypes of the mpi4py-compatible facade (``from rma.compat import MPI``),
and the names of the types rma does not support (the null datatype under their names).

rma/compat/datatype.py says what a datatype is (a layout of one basic NumPy element type);
this module makes one of each predefined type and registers their character codes for
:meth:`Datatype.fromcode`.
"""

from __future__ import annotations

import numpy as np

from .datatype import _BY_CODE, ORDER_C, ORDER_F, ORDER_FORTRAN, Datatype
from .datatype import predefined as _predefined

__all__ = [
    "Datatype",
    "DATATYPE_NULL",
    "ORDER_C",
    "ORDER_F",
    "ORDER_FORTRAN",
    # C
    "BYTE",
    "PACKED",
    "CHAR",
    "WCHAR",
    "SIGNED_CHAR",
    "UNSIGNED_CHAR",
    "SHORT",
    "UNSIGNED_SHORT",
    "INT",
    "UNSIGNED",
    "UNSIGNED_INT",
    "LONG",
    "UNSIGNED_LONG",
    "LONG_LONG",
    "UNSIGNED_LONG_LONG",
    "FLOAT",
    "DOUBLE",
    "LONG_DOUBLE",
    "C_BOOL",
    "BOOL",
    "INT8_T",
    "INT16_T",
    "INT32_T",
    "INT64_T",
    "UINT8_T",
    "UINT16_T",
    "UINT32_T",
    "UINT64_T",
    "C_COMPLEX",
    "C_FLOAT_COMPLEX",
    "C_DOUBLE_COMPLEX",
    "C_LONG_DOUBLE_COMPLEX",
    "AINT",
    "OFFSET",
    "COUNT",
    # C++
    "CXX_BOOL",
    "CXX_FLOAT_COMPLEX",
    "CXX_DOUBLE_COMPLEX",
    "CXX_LONG_DOUBLE_COMPLEX",
    # Fortran
    "CHARACTER",
    "LOGICAL",
    "INTEGER",
    "REAL",
    "DOUBLE_PRECISION",
    "COMPLEX",
    "DOUBLE_COMPLEX",
    "F_BOOL",
    "F_INT",
    "F_FLOAT",
    "F_DOUBLE",
    "F_COMPLEX",
    "F_FLOAT_COMPLEX",
    "F_DOUBLE_COMPLEX",
    # Unsupported: the null datatype under their names.
    "LOGICAL1",
    "LOGICAL2",
    "LOGICAL4",
    "LOGICAL8",
    "LOGICAL16",
    "INTEGER1",
    "INTEGER2",
    "INTEGER4",
    "INTEGER8",
    "INTEGER16",
    "REAL2",
    "REAL4",
    "REAL8",
    "REAL16",
    "COMPLEX4",
    "COMPLEX8",
    "COMPLEX16",
    "COMPLEX32",
    "BFLOAT16_T",
    "SHORT_INT",
    "TWOINT",
    "INT_INT",
    "LONG_INT",
    "FLOAT_INT",
    "DOUBLE_INT",
    "LONG_DOUBLE_INT",
    "UB",
    "LB",
]

#: The null datatype: falsy, equal only to null datatypes; any question about its layout raises
#: the facade's error with class ERR_TYPE.
DATATYPE_NULL = Datatype()

# C types. The codes of the types fromcode knows are theirs; the others get their NumPy code.
BYTE = _predefined("BYTE", np.uint8, "B")
PACKED = _predefined("PACKED", np.uint8, "B")
CHAR = _predefined("CHAR", "S1", "c")
WCHAR = _predefined("WCHAR", np.uint32, "U")  # NumPy's characters are UCS-4: 4 bytes, as wchar_t on Linux
SIGNED_CHAR = _predefined("SIGNED_CHAR", "b", "b")
UNSIGNED_CHAR = _predefined("UNSIGNED_CHAR", "B", "B")
SHORT = _predefined("SHORT", "h", "h")
UNSIGNED_SHORT = _predefined("UNSIGNED_SHORT", "H", "H")
INT = _predefined("INT", "i", "i")
UNSIGNED = _predefined("UNSIGNED", "I", "I")
UNSIGNED_INT = UNSIGNED  # one MPI type, two names
LONG = _predefined("LONG", "l", "l")
UNSIGNED_LONG = _predefined("UNSIGNED_LONG", "L", "L")
LONG_LONG = _predefined("LONG_LONG", "q", "q")
UNSIGNED_LONG_LONG = _predefined("UNSIGNED_LONG_LONG", "Q", "Q")
FLOAT = _predefined("FLOAT", "f", "f")
DOUBLE = _predefined("DOUBLE", "d", "d")
LONG_DOUBLE = _predefined("LONG_DOUBLE", "g", "g")
C_BOOL = _predefined("C_BOOL", "?", "?")
BOOL = C_BOOL
INT8_T = _predefined("INT8_T", np.int8, "i1")
INT16_T = _predefined("INT16_T", np.int16, "i2")
INT32_T = _predefined("INT32_T", np.int32, "i4")
INT64_T = _predefined("INT64_T", np.int64, "i8")
UINT8_T = _predefined("UINT8_T", np.uint8, "u1")
UINT16_T = _predefined("UINT16_T", np.uint16, "u2")
UINT32_T = _predefined("UINT32_T", np.uint32, "u4")
UINT64_T = _predefined("UINT64_T", np.uint64, "u8")
C_FLOAT_COMPLEX = _predefined("C_FLOAT_COMPLEX", "F", "F")
C_COMPLEX = C_FLOAT_COMPLEX  # one MPI type, two names
C_DOUBLE_COMPLEX = _predefined("C_DOUBLE_COMPLEX", "D", "D")
C_LONG_DOUBLE_COMPLEX = _predefined("C_LONG_DOUBLE_COMPLEX", "G", "G")
AINT = _predefined("AINT", np.int64, np.dtype(np.int64).char)
OFFSET = _predefined("OFFSET", np.int64, np.dtype(np.int64).char)
COUNT = _predefined("COUNT", np.int64, np.dtype(np.int64).char)

# C++ types: other MPI types with the same layouts as the C ones.
CXX_BOOL = _predefined("CXX_BOOL", "?", "?")
CXX_FLOAT_COMPLEX = _predefined("CXX_FLOAT_COMPLEX", "F", "F")
CXX_DOUBLE_COMPLEX = _predefined("CXX_DOUBLE_COMPLEX", "D", "D")
CXX_LONG_DOUBLE_COMPLEX = _predefined("CXX_LONG_DOUBLE_COMPLEX", "G", "G")

# Fortran types, as the usual compilers lay them out (a default LOGICAL is 4 bytes, held as int32).
CHARACTER = _predefined("CHARACTER", "S1", "c")
LOGICAL = _predefined("LOGICAL", np.int32, "i")
INTEGER = _predefined("INTEGER", np.int32, "i")
REAL = _predefined("REAL", np.float32, "f")
DOUBLE_PRECISION = _predefined("DOUBLE_PRECISION", np.float64, "d")
COMPLEX = _predefined("COMPLEX", np.complex64, "F")
DOUBLE_COMPLEX = _predefined("DOUBLE_COMPLEX", np.complex128, "D")
F_BOOL = LOGICAL
F_INT = INTEGER
F_FLOAT = REAL
F_DOUBLE = DOUBLE_PRECISION
F_COMPLEX = COMPLEX
F_FLOAT_COMPLEX = COMPLEX
F_DOUBLE_COMPLEX = DOUBLE_COMPLEX

# Types rma does not support: the null datatype under their names, so that imports work and
# any use fails with ERR_TYPE.
LOGICAL1 = LOGICAL2 = LOGICAL4 = LOGICAL8 = LOGICAL16 = DATATYPE_NULL
INTEGER1 = INTEGER2 = INTEGER4 = INTEGER8 = INTEGER16 = DATATYPE_NULL
REAL2 = REAL4 = REAL8 = REAL16 = DATATYPE_NULL
COMPLEX4 = COMPLEX8 = COMPLEX16 = COMPLEX32 = DATATYPE_NULL
BFLOAT16_T = DATATYPE_NULL
SHORT_INT = TWOINT = INT_INT = LONG_INT = FLOAT_INT = DOUBLE_INT = LONG_DOUBLE_INT = DATATYPE_NULL
UB = LB = DATATYPE_NULL

# Character codes and type strings -> predefined types, as mpi4py maps them (Datatype.fromcode).
_BY_CODE.update(
    {
        "?": C_BOOL,
        "c": CHAR,
        "b": SIGNED_CHAR,
        "h": SHORT,
        "i": INT,
        "l": LONG,
        "q": LONG_LONG,
        "B": UNSIGNED_CHAR,
        "H": UNSIGNED_SHORT,
        "I": UNSIGNED,
        "L": UNSIGNED_LONG,
        "Q": UNSIGNED_LONG_LONG,
        "f": FLOAT,
        "d": DOUBLE,
        "g": LONG_DOUBLE,
        "F": C_FLOAT_COMPLEX,
        "D": C_DOUBLE_COMPLEX,
        "G": C_LONG_DOUBLE_COMPLEX,
        "b1": C_BOOL,
        "i1": INT8_T,
        "i2": INT16_T,
        "i4": INT32_T,
        "i8": INT64_T,
        "u1": UINT8_T,
        "u2": UINT16_T,
        "u4": UINT32_T,
        "u8": UINT64_T,
        "f4": FLOAT,
        "f8": DOUBLE,
        "c8": C_FLOAT_COMPLEX,
        "c16": C_DOUBLE_COMPLEX,
    }
)
