"""Buffer specifications as mpi4py takes them: `buf`, `[buf, datatype]`, `[buf, count, datatype]`,
`[buf, (count, displ), datatype]`, each turned into the NumPy array of basic elements that an
rma call moves (a view of the caller's memory, so that a get fills it in place)."""

from __future__ import annotations

import array as _array
from typing import Any

import numpy as np

from .datatypes import BYTE, Datatype
from .errors import ERR_ARG, ERR_BUFFER, ERR_TRUNCATE, ERR_TYPE, ArgumentError
from .errors import Exception as MPIException
from .memory import bytes_of

__all__ = [
    "origin_elements",
    "result_elements",
    "datatype_of_buffer",
    "ResultRuns",
    "result_runs",
    "message_bytes",
    "plain_array",
]


def origin_elements(spec: Any, call: str) -> np.ndarray:
    """The elements an origin (or compare) specification sends, in type-map order."""
    raw, datatype, count, displ = _parse(spec, writable=False, call=call)
    runs = datatype.blocks(count)
    start = displ * datatype.extent
    _check_inside(raw, start, runs, datatype, call)
    basic = datatype.basic
    if len(runs) == 1 or not runs:
        offset, elements = runs[0] if runs else (0, 0)
        return raw[start + offset : start + offset + elements * basic.itemsize].view(basic)
    # A derived type with holes: its elements gathered (an origin is only read).
    return np.concatenate([raw[start + o : start + o + n * basic.itemsize].view(basic) for o, n in runs])


def result_elements(spec: Any, call: str) -> np.ndarray:
    """The elements a result specification receives: a view of the caller's memory."""
    raw, datatype, count, displ = _parse(spec, writable=True, call=call)
    runs = datatype.blocks(count)
    start = displ * datatype.extent
    _check_inside(raw, start, runs, datatype, call)
    if len(runs) > 1:
        raise NotImplementedError(
            f"rma.compat: {call}: a result buffer with a non-contiguous datatype is not supported; "
            "receive into a contiguous buffer and copy"
        )
    basic = datatype.basic
    offset, elements = runs[0] if runs else (0, 0)
    return raw[start + offset : start + offset + elements * basic.itemsize].view(basic)


class ResultRuns:
    """Where a received message goes: the runs of the caller's memory that a result
    specification covers (one for a contiguous datatype, one per block for a derived datatype
    with holes), filled with the message's bytes in type-map order."""

    def __init__(self, raw: np.ndarray, runs: list[tuple[int, int]], call: str) -> None:
        self._raw, self._runs, self._call = raw, runs, call  # runs: (byte offset, bytes)
        self.capacity = sum(n for _, n in runs)

    def fill(self, data: bytes | memoryview, what: str = "the message") -> None:
        """Scatters data into the runs; MPI.ERR_TRUNCATE if it holds more than they do. what:
        the message in the error ("rank 2's message (tag 5) to rank 0")."""
        if len(data) > self.capacity:
            raise MPIException(
                ERR_TRUNCATE,
                f"rma.compat: {self._call}: {what} holds {len(data)} bytes, the buffer takes {self.capacity}",
            )
        source = np.frombuffer(data, dtype=np.uint8)
        done = 0
        for offset, nbytes in self._runs:
            take = min(nbytes, len(source) - done)
            if take <= 0:
                break
            self._raw[offset : offset + take] = source[done : done + take]
            done += take


def message_bytes(spec: Any, call: str) -> memoryview:
    """The bytes a message of a send specification carries, in type-map order (a view of the
    caller's memory where the datatype is contiguous)."""
    if plain_array(spec):
        return memoryview(spec.reshape(-1).view(np.uint8))  # (what the general rule gives it)
    return memoryview(origin_elements(spec, call).view(np.uint8))


def result_runs(spec: Any, call: str) -> ResultRuns:
    """The memory a receive fills: any datatype, holes too (a receive scatters the bytes)."""
    if plain_array(spec) and spec.flags.writeable:
        return ResultRuns(spec.reshape(-1).view(np.uint8), [(0, spec.nbytes)], call)
    raw, datatype, count, displ = _parse(spec, writable=True, call=call)
    runs = datatype.blocks(count)
    start = displ * datatype.extent
    _check_inside(raw, start, runs, datatype, call)
    itemsize = datatype.basic.itemsize if runs else 1
    return ResultRuns(raw, [(start + o, n * itemsize) for o, n in runs], call)


# The dtypes a bare array may have in a message (those with an MPI datatype), found once each.
_MESSAGE_DTYPES: dict[np.dtype, bool] = {}


def plain_array(spec: Any) -> bool:
    """Whether spec is a bare C-contiguous NumPy array of a dtype MPI has: the common case of
    the messages and collectives, which skips the parsing of a specification (the messages of
    a loop: the parsing cost as much as the message itself) and gives what it would give."""
    if type(spec) is not np.ndarray or not spec.flags.c_contiguous:
        return False
    known = _MESSAGE_DTYPES.get(spec.dtype)
    if known is None:
        try:
            datatype_of_buffer(np.empty(0, spec.dtype))
            known = True
        except MPIException:
            known = False
        _MESSAGE_DTYPES[spec.dtype] = known
    return known


def _check_inside(raw: np.ndarray, start: int, runs: list[tuple[int, int]], datatype: Datatype, call: str) -> None:
    end = max((o + n * datatype.basic.itemsize for o, n in runs), default=0)
    if start + end > raw.nbytes or (runs and start + min(o for o, _ in runs) < 0):
        raise MPIException(
            ERR_BUFFER, f"rma.compat: {call}: the buffer holds {raw.nbytes} bytes, the message needs {start + end}"
        )


def _parse(spec: Any, *, writable: bool, call: str) -> tuple[np.ndarray, Datatype, int, int]:
    """(the buffer's bytes, datatype, count, displacement in extents) of a specification."""
    count = displ = None
    datatype = None
    if isinstance(spec, (list, tuple)):
        items = list(spec)
        if not 1 <= len(items) <= 4:
            # (A malformed specification is a ValueError, as in mpi4py.)
            raise ArgumentError(f"rma.compat: {call}: a buffer specification has 1 to 4 items, not {len(items)}")
        buf, rest = items[0], items[1:]
        # The last of 3 or 4 items is the datatype (None: the buffer's own); of 2, the second is
        # a count (an int or (count, displacement)) unless it is a datatype or None.
        if len(items) >= 3 or (rest and (rest[-1] is None or _is_datatype(rest[-1]))):
            last = rest.pop()
            datatype = _datatype(last) if last is not None else None
        if len(rest) == 2:
            count, displ = rest
        elif len(rest) == 1:
            if isinstance(rest[0], (list, tuple)):
                count, displ = rest[0]
            else:
                count = rest[0]
    else:
        buf = spec
    raw = bytes_of(buf, writable=writable, call=call)
    if datatype is None:
        datatype = datatype_of_buffer(buf)
    # What mpi4py refuses before calling MPI is a ValueError (ArgumentError) here too.
    if not datatype:
        raise ArgumentError(f"rma.compat: {call}: the datatype is MPI.DATATYPE_NULL")
    if datatype.extent < 0:
        raise ArgumentError(f"rma.compat: {call}: the datatype's extent {datatype.extent} is negative")
    displ = 0 if displ is None else _integer(displ, call, "displacement")
    if displ < 0:
        raise ArgumentError(f"rma.compat: {call}: displacement {displ} is negative")
    extent = datatype.extent
    if extent > 0 and displ * extent > raw.nbytes:
        raise ArgumentError(
            f"rma.compat: {call}: displacement {displ} is past the buffer's {raw.nbytes // extent} items"
        )
    if count is None:
        if extent > 0 and raw.nbytes % extent:
            raise ArgumentError(
                f"rma.compat: {call}: the buffer's {raw.nbytes} bytes are not whole items of extent {extent}: "
                "give a count"
            )
        count = (raw.nbytes - displ * extent) // extent if extent > 0 else 0
    count = _integer(count, call, "count")
    if count < 0:
        raise ArgumentError(f"rma.compat: {call}: count {count} is negative")
    if buf is None and count > 0:
        raise ArgumentError(f"rma.compat: {call}: the buffer is None but the count is {count}")
    return raw, datatype, count, displ


def datatype_of_buffer(buf: Any) -> Datatype:
    """The datatype a bare buffer describes: its NumPy dtype, array.array typecode or buffer
    format; plain bytes (bytearray, MPI.buffer) are MPI.BYTE."""
    if isinstance(buf, _array.array):
        return Datatype.fromcode(buf.typecode)
    dtype = getattr(buf, "dtype", None)
    if dtype is None:
        try:
            fmt = memoryview(buf).format
        except TypeError:
            return BYTE
        if fmt in ("B", "b", "c"):
            return BYTE
        dtype = np.dtype(fmt)
    dtype = np.dtype(dtype)
    if getattr(buf, "format", None) == "B" and dtype == np.uint8:
        return BYTE  # MPI.buffer
    try:
        return Datatype.fromcode(dtype.char)
    except ValueError:
        raise MPIException(ERR_TYPE, f"rma.compat: no MPI datatype for NumPy dtype {dtype}") from None


def _is_datatype(value: Any) -> bool:
    return isinstance(value, (Datatype, str))


def _datatype(value: Any) -> Datatype:
    if not isinstance(value, str):
        return value
    try:
        return Datatype.fromcode(value)
    except ValueError:
        # (An unknown typecode is a KeyError, as mpi4py's lookup of its table of typecodes.)
        raise KeyError(f"rma.compat: no MPI datatype for typecode {value!r}") from None


def _integer(value: Any, call: str, name: str) -> int:
    try:
        return int(value.__index__())
    except (AttributeError, TypeError):
        raise MPIException(
            ERR_ARG, f"rma.compat: {call}: {name} must be an integer, not {type(value).__name__}"
        ) from None
