"""MPI.Status of the mpi4py facade: what a completed operation learned (requests.py fills it)."""

from __future__ import annotations

import array as _array
from typing import Any

from .constants import ANY_SOURCE, ANY_TAG, UNDEFINED
from .errors import SUCCESS
from .not_covered import refuse

__all__ = ["Status"]

# The fields of a status, in the order tomemory() shows them.
_SOURCE, _TAG, _ERROR, _COUNT, _CANCELLED = range(5)


class Status:
    """What a completed operation learned (MPI_Status): its source, tag, error, the bytes it
    received (count) and whether it was cancelled."""

    def __init__(self, status: Status | None = None) -> None:
        if status is not None and not isinstance(status, Status):
            raise TypeError(f"MPI.Status() takes an MPI.Status to copy, not {type(status).__name__}")
        # One array holds the fields, so that tomemory() can show them as MPI's struct does.
        self._fields = _array.array("q", status._fields if status is not None else (ANY_SOURCE, ANY_TAG, SUCCESS, 0, 0))

    source = property(lambda self: self._fields[_SOURCE], lambda self, v: self._set(_SOURCE, v))
    tag = property(lambda self: self._fields[_TAG], lambda self, v: self._set(_TAG, v))
    error = property(lambda self: self._fields[_ERROR], lambda self, v: self._set(_ERROR, v))
    count = property(lambda self: self._fields[_COUNT], lambda self, v: self._set(_COUNT, v))
    cancelled = property(lambda self: bool(self._fields[_CANCELLED]), lambda self, v: self._set(_CANCELLED, bool(v)))

    def _set(self, field: int, value: Any) -> None:
        self._fields[field] = int(value)

    def Get_source(self) -> int:  # noqa: N802 - mpi4py's names
        return self.source

    def Get_tag(self) -> int:  # noqa: N802
        return self.tag

    def Get_error(self) -> int:  # noqa: N802
        return self.error

    def Set_source(self, source: int) -> None:  # noqa: N802
        self.source = source

    def Set_tag(self, tag: int) -> None:  # noqa: N802
        self.tag = tag

    def Set_error(self, error: int) -> None:  # noqa: N802
        self.error = error

    def Get_count(self, datatype: Any = None) -> int:  # noqa: N802
        """Whole items of `datatype` (MPI.BYTE by default) received; UNDEFINED if not whole."""
        size = 1 if datatype is None else datatype.Get_size()
        if size == 0:
            return 0
        return self.count // size if self.count % size == 0 else UNDEFINED

    def Get_elements(self, datatype: Any) -> int:  # noqa: N802
        """Basic elements of `datatype` received (those of a partly filled item too)."""
        basic = getattr(datatype, "basic", None)
        size = basic.itemsize if basic is not None else datatype.Get_size()
        if size == 0:
            return 0
        return self.count // size if self.count % size == 0 else UNDEFINED

    def Set_elements(self, datatype: Any, count: int) -> None:  # noqa: N802
        self.count = count * datatype.Get_size()

    def Is_cancelled(self) -> bool:  # noqa: N802
        return self.cancelled

    def Set_cancelled(self, flag: bool) -> None:  # noqa: N802
        self.cancelled = flag

    def tomemory(self) -> memoryview:
        """The fields as a writable memory of integers (source, tag, error, count, cancelled)."""
        return memoryview(self._fields)

    def __eq__(self, other: object) -> bool:
        return self._fields == other._fields if isinstance(other, Status) else NotImplemented

    def __hash__(self) -> None:  # type: ignore[override] - mutable, as mpi4py's
        raise TypeError("unhashable type: 'Status'")

    def __reduce__(self) -> tuple[Any, ...]:
        return (_status_of, (tuple(self._fields),))

    def _fill(self, source: int, tag: int, count: int = 0, cancelled: bool = False) -> None:
        self._fields[:] = _array.array("q", (source, tag, SUCCESS, count, int(cancelled)))


def _status_of(fields: tuple[int, ...]) -> Status:
    status = Status()
    status._fields[:] = _array.array("q", fields)
    return status


refuse(Status, "f2py py2f")
