"""rma.compat.datatypes: the layouts (runs, bounds, sizes) of predefined and derived datatypes,
worked out by hand for small cases, and mpi4py's names, codes and null datatype. One process."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Literal

import numpy as np
import numpy.typing as npt
import pytest

from rma.compat import datatypes as D
from rma.compat.datatypes import Datatype
from rma.compat.errors import ERR_ARG, ERR_COUNT, ERR_TYPE
from rma.compat.errors import Exception as MPIException


def gather(buffer: np.ndarray, datatype: Datatype, count: int = 1) -> np.ndarray:
    """The elements that `count` copies of datatype pick out of buffer (a contiguous array, C or
    Fortran), in type-map order."""
    raw = np.ravel(buffer, order="K").view(np.uint8)  # the bytes in memory order
    basic = datatype.basic
    return np.concatenate(
        [raw[o : o + n * basic.itemsize].view(basic) for o, n in datatype.blocks(count)] or [np.empty(0, basic)]
    )


def raises_mpi(error_class: int, call: Callable[..., object], *args: object) -> MPIException:
    """Call, expecting the facade's error (a RuntimeError) with that error class."""
    with pytest.raises(MPIException) as caught:
        call(*args)
    assert isinstance(caught.value, RuntimeError)
    assert caught.value.Get_error_class() == error_class
    return caught.value


# ---------------------------------------------------------------------------------------------
# Predefined types

PREDEFINED = [
    # (datatype, its elements' NumPy dtype, its name)
    (D.BYTE, np.uint8, "MPI_BYTE"),
    (D.PACKED, np.uint8, "MPI_PACKED"),
    (D.CHAR, "S1", "MPI_CHAR"),
    (D.WCHAR, np.uint32, "MPI_WCHAR"),
    (D.SIGNED_CHAR, np.byte, "MPI_SIGNED_CHAR"),
    (D.UNSIGNED_CHAR, np.ubyte, "MPI_UNSIGNED_CHAR"),
    (D.SHORT, np.short, "MPI_SHORT"),
    (D.UNSIGNED_SHORT, np.ushort, "MPI_UNSIGNED_SHORT"),
    (D.INT, np.intc, "MPI_INT"),
    (D.UNSIGNED, np.uintc, "MPI_UNSIGNED"),
    (D.LONG, "l", "MPI_LONG"),
    (D.UNSIGNED_LONG, "L", "MPI_UNSIGNED_LONG"),
    (D.LONG_LONG, np.longlong, "MPI_LONG_LONG"),
    (D.UNSIGNED_LONG_LONG, np.ulonglong, "MPI_UNSIGNED_LONG_LONG"),
    (D.FLOAT, np.float32, "MPI_FLOAT"),
    (D.DOUBLE, np.float64, "MPI_DOUBLE"),
    (D.LONG_DOUBLE, np.longdouble, "MPI_LONG_DOUBLE"),
    (D.C_BOOL, np.bool_, "MPI_C_BOOL"),
    (D.INT8_T, np.int8, "MPI_INT8_T"),
    (D.INT16_T, np.int16, "MPI_INT16_T"),
    (D.INT32_T, np.int32, "MPI_INT32_T"),
    (D.INT64_T, np.int64, "MPI_INT64_T"),
    (D.UINT8_T, np.uint8, "MPI_UINT8_T"),
    (D.UINT16_T, np.uint16, "MPI_UINT16_T"),
    (D.UINT32_T, np.uint32, "MPI_UINT32_T"),
    (D.UINT64_T, np.uint64, "MPI_UINT64_T"),
    (D.C_FLOAT_COMPLEX, np.complex64, "MPI_C_FLOAT_COMPLEX"),
    (D.C_DOUBLE_COMPLEX, np.complex128, "MPI_C_DOUBLE_COMPLEX"),
    (D.C_LONG_DOUBLE_COMPLEX, np.clongdouble, "MPI_C_LONG_DOUBLE_COMPLEX"),
    (D.AINT, np.int64, "MPI_AINT"),
    (D.OFFSET, np.int64, "MPI_OFFSET"),
    (D.COUNT, np.int64, "MPI_COUNT"),
    (D.CXX_BOOL, np.bool_, "MPI_CXX_BOOL"),
    (D.CXX_FLOAT_COMPLEX, np.complex64, "MPI_CXX_FLOAT_COMPLEX"),
    (D.CXX_DOUBLE_COMPLEX, np.complex128, "MPI_CXX_DOUBLE_COMPLEX"),
    (D.CXX_LONG_DOUBLE_COMPLEX, np.clongdouble, "MPI_CXX_LONG_DOUBLE_COMPLEX"),
    (D.CHARACTER, "S1", "MPI_CHARACTER"),
    (D.LOGICAL, np.int32, "MPI_LOGICAL"),
    (D.INTEGER, np.int32, "MPI_INTEGER"),
    (D.REAL, np.float32, "MPI_REAL"),
    (D.DOUBLE_PRECISION, np.float64, "MPI_DOUBLE_PRECISION"),
    (D.COMPLEX, np.complex64, "MPI_COMPLEX"),
    (D.DOUBLE_COMPLEX, np.complex128, "MPI_DOUBLE_COMPLEX"),
]


@pytest.mark.parametrize(("datatype", "basic", "name"), PREDEFINED, ids=[name for _, _, name in PREDEFINED])
def test_predefined_types_are_one_element_of_their_numpy_type(
    datatype: Datatype, basic: npt.DTypeLike, name: str
) -> None:
    itemsize = np.dtype(basic).itemsize
    assert datatype.basic == np.dtype(basic)
    assert datatype.Get_size() == datatype.size == itemsize
    assert datatype.Get_extent() == (0, itemsize)
    assert (datatype.lb, datatype.ub, datatype.extent) == (0, itemsize, itemsize)
    assert datatype.Get_true_extent() == (0, itemsize)
    assert (datatype.true_lb, datatype.true_ub, datatype.true_extent) == (0, itemsize, itemsize)
    assert datatype.blocks() == [(0, 1)]
    assert datatype.blocks(5) == [(0, 5)]  # consecutive copies: one run
    assert datatype.elements(5) == 5
    assert datatype.Get_name() == datatype.name == name
    assert datatype.is_predefined and datatype.is_named
    assert bool(datatype)
    assert datatype == datatype and datatype != D.DATATYPE_NULL
    # typestr describes the element to NumPy: same size.
    assert np.dtype(datatype.typestr).itemsize == itemsize
    assert datatype.Commit() is datatype


def test_predefined_types_are_distinct_but_aliases_are_the_same_type() -> None:
    types = [datatype for datatype, _, _ in PREDEFINED]
    assert len(set(types)) == len(types)  # e.g. INT and INTEGER are different MPI types
    assert D.UNSIGNED_INT is D.UNSIGNED
    assert D.C_COMPLEX is D.C_FLOAT_COMPLEX
    assert D.BOOL is D.C_BOOL
    assert (D.F_BOOL, D.F_INT, D.F_FLOAT, D.F_DOUBLE) == (D.LOGICAL, D.INTEGER, D.REAL, D.DOUBLE_PRECISION)
    assert (D.F_COMPLEX, D.F_FLOAT_COMPLEX, D.F_DOUBLE_COMPLEX) == (D.COMPLEX, D.COMPLEX, D.DOUBLE_COMPLEX)
    assert D.ORDER_FORTRAN == D.ORDER_F == 1 and D.ORDER_C == 0


def test_typestr_and_typechar() -> None:
    assert D.INT.typestr == np.dtype(np.intc).str  # '<i4' on little-endian machines
    assert D.INT.typechar == "i"
    assert D.DOUBLE.typestr == np.dtype(np.float64).str and D.DOUBLE.typechar == "d"
    assert D.INT32_T.typechar == np.dtype(np.int32).char
    assert D.CHAR.typestr == "|S1" and D.CHAR.typechar == "c"
    assert D.WCHAR.typestr == np.dtype("U1").str and D.WCHAR.typechar == "U"
    assert D.C_BOOL.typestr == "|b1" and D.C_BOOL.typechar == "?"
    assert D.BYTE.typestr == "|u1"
    # A derived type is opaque bytes of one extent.
    vector = D.INT.Create_vector(3, 2, 4)  # extent 40, worked out below
    assert vector.typestr == "|V40" and vector.typechar == "V"


# ---------------------------------------------------------------------------------------------
# fromcode and tocode

# code -> (the type, what its tocode() gives back)
CODES = {
    "?": (D.C_BOOL, "?"),
    "c": (D.CHAR, "c"),
    "b": (D.SIGNED_CHAR, "b"),
    "h": (D.SHORT, "h"),
    "i": (D.INT, "i"),
    "l": (D.LONG, "l"),
    "q": (D.LONG_LONG, "q"),
    "B": (D.UNSIGNED_CHAR, "B"),
    "H": (D.UNSIGNED_SHORT, "H"),
    "I": (D.UNSIGNED, "I"),
    "L": (D.UNSIGNED_LONG, "L"),
    "Q": (D.UNSIGNED_LONG_LONG, "Q"),
    "f": (D.FLOAT, "f"),
    "d": (D.DOUBLE, "d"),
    "g": (D.LONG_DOUBLE, "g"),
    "F": (D.C_FLOAT_COMPLEX, "F"),
    "D": (D.C_DOUBLE_COMPLEX, "D"),
    "G": (D.C_LONG_DOUBLE_COMPLEX, "G"),
    "b1": (D.C_BOOL, "?"),
    "i1": (D.INT8_T, "i1"),
    "i2": (D.INT16_T, "i2"),
    "i4": (D.INT32_T, "i4"),
    "i8": (D.INT64_T, "i8"),
    "u1": (D.UINT8_T, "u1"),
    "u2": (D.UINT16_T, "u2"),
    "u4": (D.UINT32_T, "u4"),
    "u8": (D.UINT64_T, "u8"),
    "f4": (D.FLOAT, "f"),
    "f8": (D.DOUBLE, "d"),
    "c8": (D.C_FLOAT_COMPLEX, "F"),
    "c16": (D.C_DOUBLE_COMPLEX, "D"),
}


@pytest.mark.parametrize("code", list(CODES))
def test_fromcode_and_tocode_round_trip(code: str) -> None:
    datatype, back = CODES[code]
    assert Datatype.fromcode(code) is datatype
    assert datatype.tocode() == back
    assert Datatype.fromcode(back) is datatype
    # The code means the same element to NumPy and to the datatype.
    assert datatype.size == np.dtype(code).itemsize
    assert datatype.basic.kind == np.dtype(code).kind


def test_fromcode_takes_a_native_byte_order_mark() -> None:
    native, foreign = ("<", ">") if sys.byteorder == "little" else (">", "<")
    assert Datatype.fromcode(native + "i4") is D.INT32_T
    assert Datatype.fromcode("=f8") is D.DOUBLE
    assert Datatype.fromcode("|b1") is D.C_BOOL
    assert Datatype.fromcode(D.INT16_T.typestr) is D.INT16_T
    with pytest.raises(ValueError):
        Datatype.fromcode(foreign + "i4")


@pytest.mark.parametrize("code", ["x", "i3", "", "S1", "U", "f2", "ii", "<"])
def test_fromcode_rejects_unknown_codes(code: str) -> None:
    with pytest.raises(ValueError):
        Datatype.fromcode(code)


def test_tocode_of_other_predefined_types_is_their_numpy_code() -> None:
    assert D.INTEGER.tocode() == "i"
    assert D.DOUBLE_PRECISION.tocode() == "d"
    assert D.BYTE.tocode() == "B"
    assert D.AINT.tocode() == np.dtype(np.int64).char


def test_tocode_rejects_derived_types() -> None:
    with pytest.raises(ValueError):
        D.INT.Dup().tocode()
    with pytest.raises(ValueError):
        D.DOUBLE.Create_contiguous(2).tocode()


# ---------------------------------------------------------------------------------------------
# Derived types: runs are (byte offset, elements); the cases are worked out in the comments.


def test_contiguous() -> None:
    # 3 doubles: one run of 3 elements, 24 bytes.
    triple = D.DOUBLE.Create_contiguous(3)
    assert triple.blocks() == [(0, 3)]
    assert triple.Get_extent() == (0, 24) and triple.Get_true_extent() == (0, 24)
    assert triple.size == 24 and triple.elements() == 3
    assert triple.blocks(2) == [(0, 6)]
    assert triple.basic == np.dtype(np.float64)
    assert not triple.is_predefined and not triple.is_named and triple.name == ""


def test_vector() -> None:
    # 3 blocks of 2 ints, stride 4 ints (16 bytes): ints 0-1, 4-5, 8-9.
    # Runs at bytes 0, 16, 32; ub = 32 + 2*4 = 40.
    vector = D.INT.Create_vector(3, 2, 4)
    assert vector.blocks() == [(0, 2), (16, 2), (32, 2)]
    assert vector.Get_extent() == (0, 40)
    assert vector.Get_true_extent() == (0, 40)
    assert vector.size == 24 and vector.elements() == 6
    # The second copy starts one extent (40 bytes) on: runs at 40, 56, 72. Its first run starts
    # where the first copy's last run ends (32 + 8 = 40): they merge into (32, 4).
    assert vector.blocks(2) == [(0, 2), (16, 2), (32, 4), (56, 2), (72, 2)]
    assert vector.elements(2) == 12
    buffer = np.arange(20, dtype=np.intc)
    assert gather(buffer, vector, 2).tolist() == [0, 1, 4, 5, 8, 9, 10, 11, 14, 15, 18, 19]


def test_hvector() -> None:
    # 2 doubles 12 bytes apart: runs (0, 1), (12, 1); ub = 12 + 8 = 20.
    hvector = D.DOUBLE.Create_hvector(2, 1, 12)
    assert hvector.blocks() == [(0, 1), (12, 1)]
    assert hvector.Get_extent() == (0, 20) and hvector.Get_true_extent() == (0, 20)
    assert hvector.size == 16
    # Copy 2 at 20: (20, 1), (32, 1); (12, 1) ends at 20, so it merges with (20, 1).
    assert hvector.blocks(2) == [(0, 1), (12, 2), (32, 1)]


def test_vector_with_a_negative_stride() -> None:
    # 3 shorts, stride -2 shorts (-4 bytes): at bytes 0, -4, -8; lb -8, ub 0 + 2 = 2.
    vector = D.SHORT.Create_vector(3, 1, -2)
    assert vector.blocks() == [(0, 1), (-4, 1), (-8, 1)]
    assert vector.Get_extent() == (-8, 10)
    assert vector.Get_true_extent() == (-8, 10)


def test_indexed() -> None:
    # Blocks (2 ints at int 5), (1 int at int 0), (3 ints at int 1), in that (type-map) order:
    # (20, 2), (0, 1), (4, 3); the second ends where the third starts: (0, 4). Not sorted.
    # lb 0, ub = max(20 + 8, 0 + 4, 4 + 12) = 28.
    indexed = D.INT.Create_indexed([2, 1, 3], [5, 0, 1])
    assert indexed.blocks() == [(20, 2), (0, 4)]
    assert indexed.Get_extent() == (0, 28) and indexed.Get_true_extent() == (0, 28)
    assert indexed.size == 24
    # Copy 2 at 28: (48, 2), (28, 4); nothing adjacent in type-map order.
    assert indexed.blocks(2) == [(20, 2), (0, 4), (48, 2), (28, 4)]
    buffer = np.arange(14, dtype=np.intc)
    assert gather(buffer, indexed, 2).tolist() == [5, 6, 0, 1, 2, 3, 12, 13, 7, 8, 9, 10]


def test_hindexed_with_a_negative_displacement() -> None:
    # 1 short at byte 6, 2 shorts at byte -2: lb -2, ub = max(6 + 2, -2 + 4) = 8.
    hindexed = D.SHORT.Create_hindexed([1, 2], [6, -2])
    assert hindexed.blocks() == [(6, 1), (-2, 2)]
    assert hindexed.Get_extent() == (-2, 10)
    assert hindexed.Get_true_extent() == (-2, 10)
    assert (hindexed.lb, hindexed.ub, hindexed.true_lb, hindexed.true_ub) == (-2, 8, -2, 8)
    assert hindexed.size == 6
    # Copy 2 at +10: (16, 1), (8, 2).
    assert hindexed.blocks(2) == [(6, 1), (-2, 2), (16, 1), (8, 2)]


def test_indexed_block_and_hindexed_block() -> None:
    # 2 floats at float 3 (byte 12) and at float 0: ub = 12 + 8 = 20.
    indexed = D.FLOAT.Create_indexed_block(2, [3, 0])
    assert indexed.blocks() == [(12, 2), (0, 2)]
    assert indexed.Get_extent() == (0, 20) and indexed.size == 16
    # 1 double at bytes 16, 0, 8: the last two are adjacent in type-map order; ub 24.
    hindexed = D.DOUBLE.Create_hindexed_block(1, [16, 0, 8])
    assert hindexed.blocks() == [(16, 1), (0, 2)]
    assert hindexed.Get_extent() == (0, 24) and hindexed.size == 24


def test_subarray_in_c_order() -> None:
    # A 4 x 5 int array, the 2 x 3 block from (1, 1): rows 1 and 2, columns 1 to 3.
    # Element (r, c) is int 5r + c: runs at ints 6 and 11 (bytes 24 and 44), 3 ints each.
    # The type spans the whole array: lb 0, extent 20 ints = 80 bytes; data from 24 to 56.
    sub = D.INT.Create_subarray([4, 5], [2, 3], [1, 1])
    assert sub.blocks() == [(24, 3), (44, 3)]
    assert sub.Get_extent() == (0, 80)
    assert sub.Get_true_extent() == (24, 32)
    assert sub.size == 24
    assert sub.blocks(2) == [(24, 3), (44, 3), (104, 3), (124, 3)]
    array = np.arange(20, dtype=np.intc).reshape(4, 5)
    assert gather(array, sub).tolist() == array[1:3, 1:4].ravel().tolist()


def test_subarray_in_fortran_order() -> None:
    # The same shapes in column-major order: element (r, c) is int r + 4c. Columns 1 to 3, rows
    # 1 and 2: runs at ints 5, 9, 13 (bytes 20, 36, 52), 2 ints each. Data from 20 to 60.
    sub = D.INT.Create_subarray([4, 5], [2, 3], [1, 1], order=D.ORDER_F)
    assert sub.blocks() == [(20, 2), (36, 2), (52, 2)]
    assert sub.Get_extent() == (0, 80)
    assert sub.Get_true_extent() == (20, 40)
    assert sub.size == 24
    array = np.asfortranarray(np.arange(20, dtype=np.intc).reshape(4, 5))
    assert gather(array, sub).tolist() == array[1:3, 1:4].ravel(order="F").tolist()
    assert D.INT.Create_subarray([4, 5], [2, 3], [1, 1], D.ORDER_FORTRAN).blocks() == sub.blocks()


@pytest.mark.parametrize("order", [D.ORDER_C, D.ORDER_F])
def test_subarray_in_three_dimensions_matches_numpy(order: int) -> None:
    sizes, subsizes, starts = [3, 4, 5], [2, 2, 3], [1, 0, 2]
    sub = D.DOUBLE.Create_subarray(sizes, subsizes, starts, order)
    numpy_order: Literal["C", "F"] = "C" if order == D.ORDER_C else "F"
    array = np.arange(60, dtype=np.float64).reshape(tuple(sizes), order=numpy_order)
    expected = array[1:3, 0:2, 2:5].ravel(order=numpy_order)
    assert gather(array, sub).tolist() == expected.tolist()
    assert sub.Get_extent() == (0, 60 * 8)
    assert sub.elements() == 12


def test_resized() -> None:
    # An int that repeats every 8 bytes: data 0-4, extent 8.
    padded = D.INT.Create_resized(0, 8)
    assert padded.blocks() == [(0, 1)]
    assert padded.Get_extent() == (0, 8) and padded.Get_true_extent() == (0, 4)
    assert padded.size == 4
    assert padded.blocks(3) == [(0, 1), (8, 1), (16, 1)]
    # Three of them contiguous: the new bounds come from the resized ones, 0 to 2*8 + 8 = 24.
    three = padded.Create_contiguous(3)
    assert three.blocks() == [(0, 1), (8, 1), (16, 1)]
    assert three.Get_extent() == (0, 24) and three.Get_true_extent() == (0, 20)
    # A negative lower bound: copies 12 bytes apart, at 0 and 12; lb -4, ub 12 + 8 = 20.
    shifted = D.INT.Create_resized(-4, 12)
    assert (shifted.lb, shifted.ub) == (-4, 8)
    pair = shifted.Create_contiguous(2)
    assert pair.blocks() == [(0, 1), (12, 1)]
    assert pair.Get_extent() == (-4, 24) and pair.Get_true_extent() == (0, 16)


def test_columns_of_a_matrix() -> None:
    # A 3 x 4 double matrix: a column is 3 doubles 4 apart (bytes 0, 32, 64), extent 64 + 8 = 72.
    # Resized to one double, consecutive columns start 8 bytes apart.
    column = D.DOUBLE.Create_vector(3, 1, 4)
    assert column.blocks() == [(0, 1), (32, 1), (64, 1)]
    assert column.Get_extent() == (0, 72)
    columns = column.Create_resized(0, 8)
    assert columns.blocks(2) == [(0, 1), (32, 1), (64, 1), (8, 1), (40, 1), (72, 1)]
    matrix = np.arange(12, dtype=np.float64).reshape(3, 4)
    assert gather(matrix, columns, 2).tolist() == matrix[:, 0:2].T.ravel().tolist()
    # A type made of a type with holes: each block is copies of its runs.
    two = columns.Create_contiguous(2)
    assert two.blocks() == columns.blocks(2)
    assert two.Get_extent() == (0, 16) and two.Get_true_extent() == (0, 80)


def test_nested_vector_of_vectors() -> None:
    # inner: 2 blocks of 1 short, stride 2 shorts: shorts 0 and 2, extent 3 shorts = 6 bytes.
    # outer: 2 blocks of 2 inners, stride 3 inner extents (18 bytes):
    #   block 0: inners at 0 and 6 -> shorts 0, 2, 3, 5 -> runs (0, 1), (4, 2), (10, 1)
    #   block 1: inners at 18 and 24 -> shorts 9, 11, 12, 14 -> (18, 1), (22, 2), (28, 1)
    # ub = 18 + 6 + 6 = 30.
    inner = D.SHORT.Create_vector(2, 1, 2)
    assert inner.Get_extent() == (0, 6)
    outer = inner.Create_vector(2, 2, 3)
    assert outer.blocks() == [(0, 1), (4, 2), (10, 1), (18, 1), (22, 2), (28, 1)]
    assert outer.Get_extent() == (0, 30) and outer.Get_true_extent() == (0, 30)
    assert outer.size == 16 and outer.elements() == 8


def test_empty_types() -> None:
    for empty in (
        D.INT.Create_contiguous(0),
        D.INT.Create_vector(0, 2, 3),
        D.INT.Create_vector(3, 0, 3),
        D.INT.Create_indexed([], []),
        D.INT.Create_hindexed([0, 0], [4, 8]),
    ):
        assert empty.blocks() == [] and empty.blocks(3) == []
        assert empty.size == 0 and empty.elements(3) == 0
        assert empty.Get_extent() == (0, 0) and empty.Get_true_extent() == (0, 0)
        assert empty.basic == np.dtype(np.intc)


def test_byte_types_are_raw_bytes() -> None:
    record = D.BYTE.Create_hvector(2, 3, 5)  # bytes 0-2 and 5-7
    assert record.basic == np.dtype(np.uint8)
    assert record.blocks() == [(0, 3), (5, 3)]
    assert record.Get_extent() == (0, 8) and record.size == 6


# ---------------------------------------------------------------------------------------------
# Handles, names, Dup, Commit, Free


def test_dup_is_a_new_derived_type_with_the_same_layout() -> None:
    dup = D.INT.Dup()
    assert dup != D.INT and dup == dup
    assert not dup.is_predefined and not dup.is_named
    assert dup.size == 4 and dup.Get_extent() == (0, 4) and dup.blocks(2) == [(0, 2)]
    assert dup.basic == D.INT.basic
    vector = D.INT.Create_vector(2, 1, 3)
    again = vector.Dup()
    assert again != vector
    assert again.blocks(2) == vector.blocks(2) and again.Get_extent() == vector.Get_extent()


def test_datatype_of_a_datatype_is_the_same_datatype() -> None:
    same = Datatype(D.INT)
    assert same == D.INT
    assert (same != D.INT) is False
    assert hash(same) == hash(D.INT)
    assert same.is_predefined and same.name == "MPI_INT"
    assert {D.INT: "int"}[same] == "int"
    with pytest.raises(TypeError):
        Datatype("i")  # type: ignore[arg-type]


def test_names() -> None:
    vector = D.INT.Create_vector(2, 1, 2)
    assert vector.Get_name() == ""
    vector.Set_name("pairs")
    assert vector.Get_name() == "pairs" and Datatype(vector).name == "pairs"
    vector.name = "strided"
    assert vector.name == "strided"
    assert D.INT.Get_name() == "MPI_INT"  # the other types keep theirs


def test_commit_returns_the_type() -> None:
    vector = D.INT.Create_vector(2, 1, 2)
    assert vector.Commit() is vector


def test_free_makes_a_derived_type_null() -> None:
    vector = D.INT.Create_vector(2, 1, 2).Commit()
    vector.Free()
    assert not vector
    assert vector == D.DATATYPE_NULL
    raises_mpi(ERR_TYPE, vector.Get_size)
    raises_mpi(ERR_TYPE, vector.Free)  # twice


def test_free_refuses_predefined_types() -> None:
    for datatype in (D.INT, D.DOUBLE, D.BYTE, D.INTEGER):
        raises_mpi(ERR_TYPE, datatype.Free)
        assert datatype and datatype.is_predefined
    assert D.INT.size == 4 and D.INT.name == "MPI_INT"


# ---------------------------------------------------------------------------------------------
# The null datatype

NULL_NAMES = [
    "LOGICAL1", "LOGICAL2", "LOGICAL4", "LOGICAL8", "LOGICAL16",
    "INTEGER1", "INTEGER2", "INTEGER4", "INTEGER8", "INTEGER16",
    "REAL2", "REAL4", "REAL8", "REAL16",
    "COMPLEX4", "COMPLEX8", "COMPLEX16", "COMPLEX32",
    "BFLOAT16_T", "SHORT_INT", "TWOINT", "INT_INT", "LONG_INT", "FLOAT_INT", "DOUBLE_INT", "LONG_DOUBLE_INT",
    "UB", "LB",
]  # fmt: skip


def test_unsupported_names_are_the_null_datatype() -> None:
    for name in NULL_NAMES:
        assert getattr(D, name) is D.DATATYPE_NULL, name
    assert set(NULL_NAMES) <= set(D.__all__)


def test_null_datatype() -> None:
    null = D.DATATYPE_NULL
    assert not null and bool(null) is False
    assert null == Datatype() and null == D.REAL16
    assert null != D.INT and null != D.DOUBLE.Dup()
    assert hash(null) == hash(Datatype())
    assert null.is_predefined and not null.is_named
    error = raises_mpi(ERR_TYPE, null.Get_size)
    assert isinstance(error, RuntimeError)
    for call in (
        null.Get_extent,
        null.Get_true_extent,
        null.blocks,
        null.elements,
        null.Dup,
        null.Commit,
        null.Free,
        null.Get_name,
        null.tocode,
        lambda: null.basic,
        lambda: null.size,
        lambda: null.extent,
        lambda: null.typestr,
        lambda: null.Create_contiguous(2),
        lambda: null.Create_vector(2, 1, 2),
        lambda: null.Create_hvector(2, 1, 2),
        lambda: null.Create_indexed([1], [0]),
        lambda: null.Create_hindexed([1], [0]),
        lambda: null.Create_indexed_block(1, [0]),
        lambda: null.Create_hindexed_block(1, [0]),
        lambda: null.Create_subarray([2], [1], [0]),
        lambda: null.Create_resized(0, 4),
    ):
        raises_mpi(ERR_TYPE, call)


# ---------------------------------------------------------------------------------------------
# Invalid arguments


def test_negative_counts_are_err_count() -> None:
    raises_mpi(ERR_COUNT, D.INT.Create_contiguous, -1)
    raises_mpi(ERR_COUNT, D.INT.Create_vector, -1, 1, 1)
    raises_mpi(ERR_COUNT, D.INT.Create_hvector, 1, -1, 1)
    raises_mpi(ERR_COUNT, D.INT.Create_indexed, [1, -1], [0, 2])
    raises_mpi(ERR_COUNT, D.INT.Create_indexed_block, -2, [0])
    raises_mpi(ERR_COUNT, D.INT.blocks, -1)
    raises_mpi(ERR_COUNT, D.INT.elements, -1)


def test_invalid_arguments_are_err_arg() -> None:
    raises_mpi(ERR_ARG, D.INT.Create_indexed, [1, 2], [0])
    raises_mpi(ERR_ARG, D.INT.Create_hindexed, [1], [0, 8])
    raises_mpi(ERR_ARG, D.INT.Create_subarray, [4, 4], [2], [0, 0])
    raises_mpi(ERR_ARG, D.INT.Create_subarray, [], [], [])
    raises_mpi(ERR_ARG, D.INT.Create_subarray, [4], [5], [0])  # larger than the array
    raises_mpi(ERR_ARG, D.INT.Create_subarray, [4], [2], [3])  # runs past the end
    raises_mpi(ERR_ARG, D.INT.Create_subarray, [4], [2], [-1])
    raises_mpi(ERR_ARG, D.INT.Create_subarray, [4], [2], [0], 7)
    with pytest.raises(TypeError):
        D.INT.Create_contiguous(2.0)  # type: ignore[arg-type]
