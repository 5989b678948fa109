"""The MPI datatype of the mpi4py-compatible facade (``from rma.compat import MPI``): the class,
its constructors and their layouts (rma/compat/datatypes.py makes the predefined types). A
:class:`Datatype` here describes a layout of ONE basic NumPy element type: which elements of a
buffer a message of that type covers. rma moves NumPy elements, so struct types of mixed element
types are out of scope, and so are the pair types of MINLOC/MAXLOC and the sized Fortran types:
those names exist (code written for mpi4py imports them) but are the null datatype.

The representation is deliberately flat. A type is

* ``basic``: the NumPy dtype of its elements (raw bytes, ``uint8``, for BYTE and PACKED);
* ``runs``: the contiguous runs of basic elements it covers, as ``(byte offset, elements)``
  pairs in type-map order, adjacent runs merged;
* ``lb`` and ``extent``: where the next copy of the type starts when types are repeated.

Every constructor (vector, indexed, subarray, ...) reduces to "place blocks of consecutive copies
of the old type at these byte displacements" (:func:`_place`), which computes the new runs and
the new bounds the way the MPI standard defines them for single-type constructors.
"""

from __future__ import annotations

import itertools
import math
import operator
import sys
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from .not_covered import refuse

#: Array storage orders for :meth:`Datatype.Create_subarray`.
ORDER_C = 0
ORDER_F = 1
ORDER_FORTRAN = ORDER_F

# Handles: a unique integer per datatype (0 is the null datatype). Copies made with
# Datatype(other) share the handle, so that they compare equal, as mpi4py's objects do.
_NULL_HANDLE = 0
_new_handles = itertools.count(1)

# Character codes and type strings -> predefined types, as mpi4py maps them: filled by
# rma/compat/datatypes.py, read by Datatype.fromcode.
_BY_CODE: dict[str, Datatype] = {}

# Names belong to the handle (MPI names the type, not the Python object), so they live here.
_names: dict[int, str] = {}

# A run: (byte offset from the start, number of basic elements).
Run = tuple[int, int]


# The user's attributes of the types that have any, by handle.
_attributes_of: dict[int, Any] = {}


def _attributes(handle: int) -> Any:
    """The attributes of type `handle` (an attributes.Attributes, made at the first use).
    attributes.py is imported late, as errors.py is (see _error)."""
    from .attributes import Attributes

    return _attributes_of.setdefault(handle, Attributes())


def _error(error_class: str, message: str) -> BaseException:
    """Return the facade's MPI.Exception with the error class named (``"ERR_TYPE"``...).
    errors.py is imported here, late, so that the two modules' import order does not matter."""
    from . import errors

    return errors.Exception(getattr(errors, error_class), f"rma.compat: {message}")


def _count(value: Any, what: str) -> int:
    """Return value as an int that must not be negative (counts and block lengths)."""
    number = operator.index(value)
    if number < 0:
        raise _error("ERR_COUNT", f"{what} must not be negative, not {number}")
    return number


def _ints(values: Iterable[Any]) -> list[int]:
    """Return the values as ints (operator.index: a float is a TypeError, not truncated)."""
    return [operator.index(value) for value in values]


def _merge(runs: Iterable[Run], itemsize: int) -> tuple[Run, ...]:
    """Return the runs without empty ones, each run joined to the one before it when it starts
    where that one ends. Only neighbours in type-map order are joined: the order of the elements
    in a message is the type-map order, so runs are never sorted."""
    merged: list[Run] = []
    for offset, elements in runs:
        if elements == 0:
            continue
        if merged and merged[-1][0] + merged[-1][1] * itemsize == offset:
            merged[-1] = (merged[-1][0], merged[-1][1] + elements)
        else:
            merged.append((offset, elements))
    return tuple(merged)


class Datatype:
    """An MPI datatype: a layout of elements of one basic NumPy type (see the module's docstring).

    ``Datatype()`` is a new null datatype; ``Datatype(other)`` is another Python object for the
    same datatype (equal to it, as in mpi4py). Derived types come from the ``Create_*`` methods.
    """

    # The state of a non-null type; a null type has handle 0 and basic None.
    _handle: int
    _basic: np.dtype[Any] | None
    _runs: tuple[Run, ...]
    _lb: int
    _extent: int
    _predefined: bool
    # The character code or type string tocode() returns (predefined types only).
    _code: str | None

    def __init__(self, datatype: Datatype | None = None) -> None:
        if datatype is None:
            self._set_null()
        elif isinstance(datatype, Datatype):
            self._handle = datatype._handle
            self._basic = datatype._basic
            self._runs = datatype._runs
            self._lb = datatype._lb
            self._extent = datatype._extent
            self._predefined = datatype._predefined
            self._code = datatype._code
        else:
            raise TypeError(f"expected a Datatype, not {type(datatype).__name__}")

    def _set_null(self) -> None:
        self._handle = _NULL_HANDLE
        self._basic = None
        self._runs = ()
        self._lb = 0
        self._extent = 0
        self._predefined = False
        self._code = None

    @classmethod
    def _make(
        cls, basic: np.dtype[Any], runs: tuple[Run, ...], lb: int, extent: int, code: str | None = None
    ) -> Datatype:
        """Return a new datatype with a new handle: predefined when it has a code."""
        datatype = cls()
        datatype._handle = next(_new_handles)
        datatype._basic = basic
        datatype._runs = runs
        datatype._lb = lb
        datatype._extent = extent
        datatype._predefined = code is not None
        datatype._code = code
        return datatype

    def _basic_dtype(self) -> np.dtype[Any]:
        """Return the basic dtype, raising the facade's ERR_TYPE error for a null datatype:
        every question about the layout goes through here."""
        if self._basic is None:
            raise _error("ERR_TYPE", "invalid datatype: DATATYPE_NULL (or a freed datatype)")
        return self._basic

    # Comparison: by handle, as mpi4py compares the MPI handles.

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Datatype):
            return NotImplemented
        return self._handle == other._handle

    def __ne__(self, other: object) -> bool:
        if not isinstance(other, Datatype):
            return NotImplemented
        return self._handle != other._handle

    def __hash__(self) -> int:
        return hash((Datatype, self._handle))

    def __bool__(self) -> bool:
        return self._handle != _NULL_HANDLE

    def __repr__(self) -> str:
        if not self:
            return "<Datatype DATATYPE_NULL>"
        name = _names.get(self._handle) or "derived"
        return f"<Datatype {name}: {self.typestr}, size {self.size}, extent {self.extent}>"

    # Internal layout, for the facade's Win.

    @property
    def basic(self) -> np.dtype[Any]:
        """The NumPy dtype of the elementary type (``uint8`` for the raw bytes of BYTE and
        PACKED, ``S1`` for CHAR and CHARACTER)."""
        return self._basic_dtype()

    def blocks(self, count: int = 1) -> list[Run]:
        """Return the contiguous runs of basic elements that ``count`` consecutive copies of this
        type cover, as ``(byte offset, elements)``, in type-map order, adjacent runs merged.

        Copy ``i`` starts ``i * extent`` bytes after the start. Offsets are from the address the
        type is applied at, so they are negative where the type reaches before it (true_lb < 0).
        """
        runs, _bounds = _place(self, [(0, _count(count, "count"))])
        return list(runs)

    def elements(self, count: int = 1) -> int:
        """Return the number of basic elements in ``count`` copies of this type."""
        self._basic_dtype()
        return _count(count, "count") * sum(elements for _offset, elements in self._runs)

    # Size and bounds.

    def Get_size(self) -> int:
        """Return the number of bytes of data in the type (holes not counted)."""
        return self.elements() * self._basic_dtype().itemsize

    @property
    def size(self) -> int:
        """The number of bytes of data in the type."""
        return self.Get_size()

    def Get_extent(self) -> tuple[int, int]:
        """Return ``(lb, extent)``: the lower bound, and the bytes from one copy to the next."""
        self._basic_dtype()
        return self._lb, self._extent

    @property
    def lb(self) -> int:
        """The lower bound."""
        return self.Get_extent()[0]

    @property
    def ub(self) -> int:
        """The upper bound, ``lb + extent``."""
        lb, extent = self.Get_extent()
        return lb + extent

    @property
    def extent(self) -> int:
        """The extent."""
        return self.Get_extent()[1]

    def Get_true_extent(self) -> tuple[int, int]:
        """Return ``(true_lb, true_extent)``: the bounds of the bytes the data really occupies,
        whatever Create_resized said. An empty type has (0, 0)."""
        itemsize = self._basic_dtype().itemsize
        if not self._runs:
            return 0, 0
        true_lb = min(offset for offset, _elements in self._runs)
        true_ub = max(offset + elements * itemsize for offset, elements in self._runs)
        return true_lb, true_ub - true_lb

    @property
    def true_lb(self) -> int:
        """The true lower bound."""
        return self.Get_true_extent()[0]

    @property
    def true_ub(self) -> int:
        """The true upper bound, ``true_lb + true_extent``."""
        true_lb, true_extent = self.Get_true_extent()
        return true_lb + true_extent

    @property
    def true_extent(self) -> int:
        """The true extent."""
        return self.Get_true_extent()[1]

    # Constructors. Each one says where blocks of consecutive copies of self go, in bytes.

    def Dup(self) -> Datatype:
        """Return a new derived type with the same layout (a new handle: not equal to self), and
        the attributes their keyvals' copy callbacks give it."""
        basic = self._basic_dtype()
        made = Datatype._make(basic, self._runs, self._lb, self._extent)
        if self._handle in _attributes_of:
            _attributes_of[made._handle] = _attributes_of[self._handle].copied(self)
        return made

    # Attributes: the user's keyvals (Create_keyval), held per type (by handle: Datatype(other)
    # is the same type). No keyval of MPI's own is set on a datatype.

    def Get_attr(self, keyval: int) -> Any:  # noqa: N802
        """The value of the user's attribute `keyval`, or None if this type has none."""
        self._basic_dtype()
        return _attributes(self._handle).get(keyval, "Datatype.Get_attr")[1]

    def Set_attr(self, keyval: int, attrval: Any) -> None:  # noqa: N802
        self._basic_dtype()
        _attributes(self._handle).set(self, keyval, attrval, "Datatype.Set_attr")

    def Delete_attr(self, keyval: int) -> None:  # noqa: N802
        self._basic_dtype()
        _attributes(self._handle).delete(self, keyval, "Datatype.Delete_attr")

    @classmethod
    def Create_keyval(cls, copy_fn: Any = None, delete_fn: Any = None, nopython: bool = False) -> int:  # noqa: N802
        """A new keyval: `copy_fn(type, keyval, value)` gives a Dup's value, `delete_fn(type,
        keyval, value)` runs when the value goes (the rules of Comm.Create_keyval)."""
        from . import attributes

        return attributes.create(copy_fn, delete_fn)

    @classmethod
    def Free_keyval(cls, keyval: int) -> int:  # noqa: N802
        from . import attributes

        attributes.free(keyval, "Datatype.Free_keyval")
        return -1  # (MPI.KEYVAL_INVALID)

    def Create_contiguous(self, count: int) -> Datatype:
        """Return ``count`` copies of self, one extent apart."""
        return self._derived([(0, _count(count, "count"))])

    def Create_vector(self, count: int, blocklength: int, stride: int) -> Datatype:
        """Return ``count`` blocks of ``blocklength`` copies, the blocks ``stride`` extents of
        self apart."""
        extent = self.extent
        count, blocklength = _count(count, "count"), _count(blocklength, "blocklength")
        stride = operator.index(stride)
        return self._derived([(i * stride * extent, blocklength) for i in range(count)])

    def Create_hvector(self, count: int, blocklength: int, stride: int) -> Datatype:
        """Return ``count`` blocks of ``blocklength`` copies, the blocks ``stride`` bytes apart."""
        self._basic_dtype()
        count, blocklength = _count(count, "count"), _count(blocklength, "blocklength")
        stride = operator.index(stride)
        return self._derived([(i * stride, blocklength) for i in range(count)])

    def Create_indexed(self, blocklengths: Sequence[int], displacements: Sequence[int]) -> Datatype:
        """Return blocks of ``blocklengths[i]`` copies at ``displacements[i]`` extents of self."""
        extent = self.extent
        lengths = self._lengths(blocklengths, displacements)
        return self._derived([(d * extent, b) for b, d in zip(lengths, _ints(displacements))])

    def Create_hindexed(self, blocklengths: Sequence[int], displacements: Sequence[int]) -> Datatype:
        """Return blocks of ``blocklengths[i]`` copies at ``displacements[i]`` bytes."""
        self._basic_dtype()
        lengths = self._lengths(blocklengths, displacements)
        return self._derived(list(zip(_ints(displacements), lengths)))

    def Create_indexed_block(self, blocklength: int, displacements: Sequence[int]) -> Datatype:
        """Return blocks of ``blocklength`` copies at ``displacements[i]`` extents of self."""
        extent = self.extent
        blocklength = _count(blocklength, "blocklength")
        return self._derived([(d * extent, blocklength) for d in _ints(displacements)])

    def Create_hindexed_block(self, blocklength: int, displacements: Sequence[int]) -> Datatype:
        """Return blocks of ``blocklength`` copies at ``displacements[i]`` bytes."""
        self._basic_dtype()
        blocklength = _count(blocklength, "blocklength")
        return self._derived([(d, blocklength) for d in _ints(displacements)])

    def Create_subarray(
        self, sizes: Sequence[int], subsizes: Sequence[int], starts: Sequence[int], order: int = ORDER_C
    ) -> Datatype:
        """Return the subarray ``subsizes`` at ``starts`` of an array of ``sizes`` copies of self
        stored in C (row-major) or Fortran (column-major) order. As in MPI, the type spans the
        whole array: lb 0 and extent ``prod(sizes) * extent``, so consecutive copies are
        consecutive arrays."""
        extent = self.extent
        sizes, subsizes, starts = _ints(sizes), _ints(subsizes), _ints(starts)
        if not len(sizes) == len(subsizes) == len(starts) >= 1:
            raise _error("ERR_ARG", "sizes, subsizes and starts must have the same length, at least 1")
        for size, subsize, start in zip(sizes, subsizes, starts):
            if size < 1 or not 0 <= subsize <= size or not 0 <= start <= size - subsize:
                raise _error("ERR_ARG", f"invalid subarray: size {size}, subsize {subsize}, start {start}")
        if order == ORDER_F:
            # Column-major is row-major with the dimensions in reverse order.
            sizes, subsizes, starts = sizes[::-1], subsizes[::-1], starts[::-1]
        elif order != ORDER_C:
            raise _error("ERR_ARG", f"invalid order {order!r}: use ORDER_C or ORDER_F")
        # strides[i]: elements (copies of self) from one index of dimension i to the next.
        strides = [math.prod(sizes[i + 1 :]) for i in range(len(sizes))]
        # Each row of the last (fastest) dimension is one block of subsizes[-1] copies.
        blocks = []
        outer = [range(start, start + subsize) for start, subsize in zip(starts[:-1], subsizes[:-1])]
        for index in itertools.product(*outer):
            first = sum(i * stride for i, stride in zip(index, strides)) + starts[-1]
            blocks.append((first * extent, subsizes[-1]))
        runs, _bounds = _place(self, blocks)
        return Datatype._make(self._basic_dtype(), runs, 0, math.prod(sizes) * extent)

    def Create_resized(self, lb: int, extent: int) -> Datatype:
        """Return the same data with a new lower bound and extent (the true extent does not
        change): how a strided type is made to repeat at a stride of one element."""
        basic = self._basic_dtype()
        return Datatype._make(basic, self._runs, operator.index(lb), operator.index(extent))

    def _lengths(self, blocklengths: Sequence[int], displacements: Sequence[int]) -> list[int]:
        """Return the block lengths, checked: not negative, one per displacement."""
        lengths = [_count(b, "blocklength") for b in blocklengths]
        if len(lengths) != len(displacements):
            raise _error("ERR_ARG", f"{len(lengths)} block lengths for {len(displacements)} displacements")
        return lengths

    def _derived(self, blocks: list[Run]) -> Datatype:
        """Return the derived type made of blocks of consecutive copies of self, each block
        given as (byte displacement, copies)."""
        runs, (lb, ub) = _place(self, blocks)
        return Datatype._make(self._basic_dtype(), runs, lb, ub - lb)

    # Life cycle.

    def Commit(self) -> Datatype:
        """Commit the type (nothing to do here: every type is ready for use) and return it."""
        self._basic_dtype()
        return self

    def Free(self) -> None:
        """Free a derived type: this object becomes the null datatype. Predefined types cannot
        be freed."""
        self._basic_dtype()
        if self._predefined:
            raise _error("ERR_TYPE", f"cannot free the predefined datatype {self.Get_name()}")
        _names.pop(self._handle, None)
        held = _attributes_of.pop(self._handle, None)
        if held is not None:
            held.clear(self, "Datatype.Free")
        self._set_null()

    # Names and kinds.

    def Get_name(self) -> str:
        """Return the type's name: "MPI_INT" and so on for predefined types, "" until Set_name
        for derived types."""
        self._basic_dtype()
        return _names.get(self._handle, "")

    def Set_name(self, name: str) -> None:
        """Name the type (for every object of the same datatype)."""
        self._basic_dtype()
        _names[self._handle] = str(name)

    @property
    def name(self) -> str:
        """The type's name."""
        return self.Get_name()

    @name.setter
    def name(self, value: str) -> None:
        self.Set_name(value)

    @property
    def is_predefined(self) -> bool:
        """Whether the type is predefined (not made by a constructor). The null datatype is a
        predefined constant too."""
        return self._predefined or not self

    @property
    def is_named(self) -> bool:
        """Whether the type is a named predefined type (all predefined types here are)."""
        return self._predefined

    @property
    def handle(self) -> int:
        """The type's handle: an integer unique to the datatype, 0 for the null datatype."""
        return self._handle

    # Character codes.

    def tocode(self) -> str:
        """Return the character code or type string of a predefined type, one that
        :meth:`fromcode` maps back to it where it can ('i' for INT, 'i4' for INT32_T, ...).
        Raises ValueError for derived types."""
        self._basic_dtype()
        if self._code is None:
            raise ValueError("cannot map a derived datatype to a character code")
        return self._code

    @classmethod
    def fromcode(cls, code: str) -> Datatype:
        """Return the predefined type of a character code ('i', 'd', ...) or type string
        ('i4', 'f8', ..., also with a native byte order mark: '<i4', '=i4', '|b1').
        Raises ValueError for a code with no type."""
        if not isinstance(code, str):
            raise TypeError(f"expected a str, not {type(code).__name__}")
        key = code
        if len(key) > 1 and key[0] in _NATIVE_ORDER_MARKS:
            key = key[1:]
        datatype = _BY_CODE.get(key)
        if datatype is None:
            raise ValueError(f"cannot map code {code!r} to a datatype")
        return datatype

    @property
    def typechar(self) -> str:
        """The NumPy character code: 'i' for INT, 'c' for CHAR, 'V' (void) for derived types."""
        self._basic_dtype()
        return "V" if self._code is None else _code_dtype(self._code).char

    @property
    def typestr(self) -> str:
        """The NumPy array-interface type string: '<i4' for INT, and '|V<extent>' (opaque bytes
        of one extent) for derived types."""
        self._basic_dtype()
        return f"|V{self._extent}" if self._code is None else _code_dtype(self._code).str


def _place(old: Datatype, blocks: Iterable[Run]) -> tuple[tuple[Run, ...], tuple[int, int]]:
    """Return the runs and the bounds ``(lb, ub)`` of blocks of consecutive copies of ``old``,
    each block given as ``(byte displacement, copies)``, copy j of a block at ``displacement +
    j * extent``.

    The bounds follow MPI: the lowest lb and the highest ub of the copies placed (old's lb and ub,
    which Create_resized may have set, not its true bounds). A type with no copies has (0, 0).
    """
    basic = old._basic_dtype()
    itemsize = basic.itemsize
    lb, extent = old._lb, old._extent
    runs: list[Run] = []
    low: int | None = None
    high: int | None = None
    # A "dense" old type is one run exactly one extent long (every predefined type, for one):
    # a block of its copies is then one run, which keeps e.g. contiguous(10**6) cheap.
    dense = len(old._runs) == 1 and old._runs[0][1] * itemsize == extent
    for displacement, copies in blocks:
        if copies == 0:
            continue
        if dense:
            offset, elements = old._runs[0]
            runs.append((displacement + offset, copies * elements))
        else:
            for j in range(copies):
                start = displacement + j * extent
                runs.extend((start + offset, elements) for offset, elements in old._runs)
        # Copies 0 and copies-1 are the extreme ones (either way round: extents may be negative).
        last = (copies - 1) * extent
        block_low = displacement + min(0, last) + lb
        block_high = displacement + max(0, last) + lb + extent
        low = block_low if low is None else min(low, block_low)
        high = block_high if high is None else max(high, block_high)
    if low is None or high is None:
        return (), (0, 0)
    return _merge(runs, itemsize), (low, high)


# A leading byte order mark that fromcode ignores: native order, or none needed ('|').
_NATIVE_ORDER_MARKS = ("=", "|", "<" if sys.byteorder == "little" else ">")


def _code_dtype(code: str) -> np.dtype[Any]:
    """Return the NumPy dtype of a code ('U' alone is a zero-length string to NumPy: WCHAR is 1)."""
    return np.dtype("U1") if code == "U" else np.dtype(code)


def predefined(name: str, basic: Any, code: str) -> Datatype:
    """Return a new predefined type of one basic element named ``MPI_<name>``, tocode() ``code``."""
    dtype = np.dtype(basic)
    datatype = Datatype._make(dtype, ((0, 1),), 0, dtype.itemsize, code)
    _names[datatype._handle] = f"MPI_{name}"
    return datatype


# mpi4py's datatype calls that the facade does not cover: struct types of mixed elements (a
# Datatype here is a layout of one NumPy element type), packing, decoding, Fortran's types, and
# handles (a Datatype is a Python object here, not an MPI handle).
refuse(
    Datatype,
    """
    Create_struct Create_darray Create_dup Create_f90_complex Create_f90_integer Create_f90_real
    Get_contents Get_envelope Get_value_index Match_size Resized combiner contents decode envelope
    Pack Pack_external Pack_external_size Pack_size Unpack Unpack_external
    f2py py2f fromhandle fromint toint free
    """,
)
