"""The buffer specifications of the collectives, as mpi4py takes them, turned into the parts
each rank's message is made of: `buf`, `[buf, datatype]`, `[buf, count, datatype]`,
`[buf, (count, displ), datatype]` for one message or for `blocks` equal ones (the receive
buffer of Gather, the send buffer of Scatter...), and the v-forms `[buf, counts, datatype]`,
`[buf, (counts, displs), datatype]`, `[buf, counts, displs, datatype]` (Gatherv... Alltoallv),
and Alltoallw's `[buf, (counts, displs), datatypes]` (displacements in bytes).

A Part is a view of the caller's memory with the runs its datatype covers, so that a result
with a derived datatype (holes) is written into those runs only, as MPI does.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from .buffers import datatype_of_buffer
from .datatype import Datatype
from .errors import ERR_BUFFER, ERR_TYPE, ArgumentError
from .errors import Exception as MPIException
from .foreign import cuda_interface_array, dlpack_array
from .memory import bytes_of

__all__: list[str] = []


class Part:
    """One rank's elements of a buffer: `runs` of (byte offset in `raw`, elements) of `dtype`;
    `view`, the elements as one array, when they are contiguous (the common case)."""

    __slots__ = ("raw", "runs", "dtype", "datatype", "count", "view")

    def __init__(
        self, raw: np.ndarray, runs: list[tuple[int, int]], datatype: Datatype, count: int, view: np.ndarray | None
    ) -> None:
        self.raw, self.runs, self.datatype, self.count, self.view = raw, runs, datatype, count, view
        self.dtype = view.dtype if view is not None else datatype.basic

    @property
    def size(self) -> int:
        """The number of basic elements."""
        return self.view.size if self.view is not None else sum(n for _, n in self.runs)

    def read(self) -> np.ndarray:
        """The elements, in type-map order, as one 1-D array: a view of the caller's memory when
        contiguous (read when the collective runs, which is when MPI lets it read them)."""
        if self.view is not None:
            return self.view
        itemsize = self.dtype.itemsize
        return np.concatenate([self.raw[o : o + n * itemsize].view(self.dtype) for o, n in self.runs])

    def write(self, values: np.ndarray) -> None:
        """Store `values` (this part's element count) into the runs, in type-map order."""
        flat = np.asarray(values).reshape(-1)
        if self.view is not None:
            self.view[...] = flat
            return
        itemsize = self.dtype.itemsize
        at = 0
        for offset, n in self.runs:
            self.raw[offset : offset + n * itemsize].view(self.dtype)[...] = flat[at : at + n]
            at += n


class Spec:
    """A buffer specification parsed: its bytes, datatype, and one Part per block."""

    __slots__ = ("raw", "datatype", "counts", "displs", "buf", "elements")

    def __init__(
        self,
        raw: np.ndarray,
        datatype: Datatype,
        counts: list[int],
        displs: list[int],
        buf: Any,
        elements: np.ndarray | None = None,
    ) -> None:
        self.raw, self.datatype, self.counts, self.displs, self.buf = raw, datatype, counts, displs, buf
        self.elements = elements  # a bare array's elements (1-D), whose blocks are slices

    def part(self, index: int = 0, call: str = "", rank: int = 0) -> Part:
        """The elements of block `index`: counts[index] copies of the datatype at displs[index] extents."""
        if self.elements is not None:
            count, first = self.counts[index], self.displs[index]
            runs = [(first * self.elements.itemsize, count)] if count else []
            return Part(self.raw, runs, self.datatype, count, self.elements[first : first + count])
        start = self.displs[index] * self.datatype.extent
        return part_at(self.raw, self.datatype, self.counts[index], start, call, rank)


def message(spec: Any, *, writable: bool, call: str, rank: int, blocks: int = 1) -> Spec:
    """A one-message specification, or `blocks` equal consecutive messages (count per block:
    given, or the buffer's elements divided by `blocks`)."""
    if type(spec) is np.ndarray and _plain(spec.flags, writable):
        # A bare NumPy array, the common case: its dtype's datatype, remembered.
        datatype = _array_types.get(spec.dtype)
        if datatype is None:
            datatype = _array_types[spec.dtype] = _check_type(datatype_of_buffer(spec), call, rank)
        size = spec.size
        if blocks == 1 or size % blocks == 0:
            count = size // blocks
            elements = spec.reshape(-1)
            displs = [i * count for i in range(blocks)] if blocks > 1 else [0]
            return Spec(elements.view(np.uint8), datatype, [count] * blocks, displs, spec, elements)
    buf, count, displ, datatype = _unpack(spec, call, rank)
    raw = bytes_of(buf, writable=writable, call=call)
    datatype = _check_type(datatype if datatype is not None else _datatype_of(buf), call, rank)
    start = 0 if displ is None else _integer(displ, call, rank, "displacement")
    if count is None:
        entries = _entries(raw.nbytes - start * datatype.extent, datatype, call, rank)
        if entries % blocks:
            raise ArgumentError(
                f"rma.compat: {call}: rank {rank}'s buffer holds {entries} entries, "
                f"not a multiple of the {blocks} blocks the call divides it into"
            )
        count = entries // blocks
    count = _nonnegative(count, call, rank, "count")
    return Spec(raw, datatype, [count] * blocks, [start + i * count for i in range(blocks)], buf)


def _plain(flags: Any, writable: bool) -> bool:
    return flags.c_contiguous and (flags.writeable or not writable)


def vector(spec: Any, *, writable: bool, call: str, rank: int, blocks: int) -> Spec:
    """A v-form specification: counts and displacements (in extents) of each of `blocks` ranks."""
    if isinstance(spec, (list, tuple)):
        items = list(spec)
        counts = displs = datatype = None
        if len(items) == 2:
            buf, counts = items
            if isinstance(counts, Datatype):
                counts, datatype = None, counts
            elif isinstance(counts, tuple):
                counts, displs = counts
        elif len(items) == 3:
            buf, counts, datatype = items
            if isinstance(counts, tuple):
                counts, displs = counts
        elif len(items) == 4:
            buf, counts, displs, datatype = items
        else:
            raise ArgumentError(f"rma.compat: {call}: a buffer specification has 2 to 4 items, not {len(items)}")
    else:
        buf, counts, displs, datatype = spec, None, None, None
    raw = bytes_of(buf, writable=writable, call=call)
    datatype = _check_type(datatype if datatype is not None else _datatype_of(buf), call, rank)
    if counts is None:  # the buffer's entries dealt out, the first ranks one more
        entries = _entries(raw.nbytes, datatype, call, rank)
        counts = [entries // blocks + (entries % blocks > i) for i in range(blocks)]
    elif _is_integer(counts):
        counts = [_nonnegative(counts, call, rank, "count")] * blocks
    else:
        counts = _integers(counts, blocks, call, rank, "counts")
    if displs is None:  # packed one after another
        displs = [sum(counts[:i]) for i in range(blocks)]
    elif _is_integer(displs):  # strided
        displs = [operator.index(displs) * i for i in range(blocks)]
    else:
        displs = _integers(displs, blocks, call, rank, "displacements")
    return Spec(raw, datatype, counts, displs, buf)


def vector_w(spec: Any, *, writable: bool, call: str, rank: int, blocks: int) -> list[Part]:
    """Alltoallw's `[buf, (counts, displs), datatypes]` or `[buf, counts, displs, datatypes]`:
    one Part per rank, displacements in bytes, a datatype per rank."""
    items = list(spec) if isinstance(spec, (list, tuple)) else []
    if len(items) == 3 and isinstance(items[1], (list, tuple)) and len(items[1]) == 2:
        buf, (counts, displs), datatypes = items
    elif len(items) == 4:
        buf, counts, displs, datatypes = items
    else:
        raise ArgumentError(
            f"rma.compat: {call}: expected [buf, (counts, displs), datatypes] or [buf, counts, displs, datatypes]"
        )
    raw = bytes_of(buf, writable=writable, call=call)
    counts = _integers(counts, blocks, call, rank, "counts")
    displs = _integers(displs, blocks, call, rank, "displacements")
    if isinstance(datatypes, Datatype):
        datatypes = [datatypes] * blocks
    if len(datatypes) != blocks:
        raise ArgumentError(f"rma.compat: {call}: rank {rank} gave {len(datatypes)} datatypes for {blocks} ranks")
    return [
        part_at(raw, _check_type(datatypes[i], call, rank), counts[i], displs[i], call, rank) for i in range(blocks)
    ]


def part_at(raw: np.ndarray, datatype: Datatype, count: int, start: int, call: str, rank: int) -> Part:
    """The Part of `count` copies of `datatype` at byte `start` of `raw` (checked to be inside)."""
    itemsize = datatype.basic.itemsize
    if _contiguous(datatype):  # (a predefined type: one run, no layout to work out)
        runs = [(start, count)] if count else []
    else:
        runs = [(start + offset, n) for offset, n in datatype.blocks(count) if n]
    end = max((o + n * itemsize for o, n in runs), default=0)
    if end > raw.nbytes or (runs and min(o for o, _ in runs) < 0):
        raise MPIException(
            ERR_BUFFER,
            f"rma.compat: {call}: rank {rank}'s buffer holds {raw.nbytes} bytes, the message needs {end}",
        )
    view = None
    if len(runs) <= 1:
        offset, n = runs[0] if runs else (0, 0)
        view = raw[offset : offset + n * itemsize].view(datatype.basic)
    return Part(raw, runs, datatype, count, view)


_array_types: dict[np.dtype[Any], Datatype] = {}  # a NumPy dtype -> the datatype of its arrays
_contiguous_types: dict[int, bool] = {}  # datatype handle -> whether one copy is one element


def _contiguous(datatype: Datatype) -> bool:
    known = _contiguous_types.get(datatype.handle)
    if known is None:
        known = datatype.blocks(1) == [(0, 1)] and datatype.extent == datatype.basic.itemsize
        if datatype.is_predefined:
            _contiguous_types[datatype.handle] = known
    return known


def _unpack(spec: Any, call: str, rank: int) -> tuple[Any, Any, Any, Datatype | None]:
    """(buf, count, displ, datatype) of a one-message specification, as mpi4py unpacks it."""
    if not isinstance(spec, (list, tuple)):
        return spec, None, None, None
    items = list(spec)
    count = displ = datatype = None
    if len(items) == 2:
        buf, count = items
        if isinstance(count, (Datatype, str)):
            count, datatype = None, count
        elif isinstance(count, (list, tuple)):
            count, displ = count
    elif len(items) == 3:
        buf, count, datatype = items
        if isinstance(count, (list, tuple)):
            count, displ = count
    elif len(items) == 4:
        buf, count, displ, datatype = items
    elif len(items) == 1:
        buf = items[0]
    else:
        raise ArgumentError(f"rma.compat: {call}: a buffer specification has 1 to 4 items, not {len(items)}")
    if isinstance(datatype, str):
        datatype = Datatype.fromcode(datatype)
    return buf, count, displ, datatype


def _datatype_of(buf: Any) -> Datatype:
    """The datatype a bare buffer describes; for an object that speaks the CUDA array
    interface or DLPack (and not the buffer protocol), the element type it declares."""
    if not hasattr(buf, "dtype") and not isinstance(buf, (bytes, bytearray, memoryview)):
        try:
            memoryview(buf)
        except TypeError:
            if hasattr(buf, "__cuda_array_interface__"):
                return Datatype.fromcode(cuda_interface_array(buf).dtype.char)
            if hasattr(buf, "__dlpack__"):
                return Datatype.fromcode(dlpack_array(buf).dtype.char)
    return datatype_of_buffer(buf)


def _check_type(datatype: Datatype, call: str, rank: int) -> Datatype:
    if not isinstance(datatype, Datatype) or not datatype:
        raise MPIException(ERR_TYPE, f"rma.compat: {call}: rank {rank}'s datatype is MPI.DATATYPE_NULL")
    return datatype


def _entries(nbytes: int, datatype: Datatype, call: str, rank: int) -> int:
    extent = datatype.extent
    if extent <= 0 or nbytes % extent:
        raise ArgumentError(
            f"rma.compat: {call}: cannot infer the count: rank {rank}'s buffer of {nbytes} bytes "
            f"is not a multiple of the datatype's extent {extent}"
        )
    return nbytes // extent


def _is_integer(value: Any) -> bool:
    try:
        operator.index(value)
    except TypeError:
        return False
    return True


def _integer(value: Any, call: str, rank: int, name: str) -> int:
    try:
        return operator.index(value)
    except TypeError:
        raise ArgumentError(
            f"rma.compat: {call}: rank {rank}'s {name} must be an integer, not {type(value).__name__}"
        ) from None


def _nonnegative(value: Any, call: str, rank: int, name: str) -> int:
    number = _integer(value, call, rank, name)
    if number < 0:
        raise ArgumentError(f"rma.compat: {call}: rank {rank}'s {name} {number} is negative")
    return number


def _integers(values: Sequence[Any], blocks: int, call: str, rank: int, name: str) -> list[int]:
    numbers = [_nonnegative(v, call, rank, name) for v in values]
    if len(numbers) != blocks:
        raise ArgumentError(f"rma.compat: {call}: rank {rank} gave {len(numbers)} {name} for {blocks} ranks")
    return numbers
