"""Memory as mpi4py hands it around: MPI.buffer, Alloc_mem/Free_mem, Get_address, BOTTOM, and
the one function that turns any buffer a program passes into a NumPy view of its bytes."""

from __future__ import annotations

import ctypes
import operator
from typing import Any

import numpy as np

from .errors import ERR_ARG, ERR_BUFFER
from .errors import Exception as MPIException
from .foreign import cuda_interface_array, dlpack_array

__all__ = [
    "buffer",
    "memory",
    "Alloc_mem",
    "Free_mem",
    "Get_address",
    "BOTTOM",
    "IN_PLACE",
    "BottomType",
    "InPlaceType",
    "bytes_of",
]


class BottomType(int):
    """MPI.BOTTOM: address zero, a buffer of no bytes."""

    def __repr__(self) -> str:
        return "BOTTOM"


class InPlaceType(int):
    """MPI.IN_PLACE: "the receive buffer is also the send buffer" in collectives."""

    def __repr__(self) -> str:
        return "IN_PLACE"


BOTTOM = BottomType(0)
IN_PLACE = InPlaceType(-1)

_NOTHING: Any = object()  # (MPI.buffer() differs from MPI.buffer(None), which is a TypeError)


class buffer(np.ndarray):  # noqa: N801 - mpi4py's name: MPI.buffer
    """Bytes of memory, as mpi4py's MPI.buffer: a sequence of bytes that any buffer-taking call
    accepts, with mpi4py's `address`, `obj`, `readonly`, `cast()`, `toreadonly()`, `release()`.

    As mpi4py's, `mem[i]` is an int, `mem[a:b]` a buffer over those bytes, `mem[a:b] = data`
    copies the bytes of any bytes-like object of that length (`mem[a:b] = 7` fills them), and
    the buffer protocol exports the bytes writable unless read-only (`np.frombuffer(mem, "i")`).
    It is a one-dimensional NumPy array of uint8 underneath, so indexes other than an int or a
    slice (tuples, arrays) index as NumPy's do.
    """

    _obj: Any = None
    # A buffer of no memory: MPI.buffer() or one released (release(), Free_mem). Its address
    # and size read as 0, as mpi4py's; the array underneath stays valid (it owns its memory or
    # keeps its owner alive), so a stale view never reads freed memory.
    _empty: bool = False
    _allocated: bool = False  # (made by allocate: memory of its own, even of no bytes)

    def __new__(cls, obj: Any = _NOTHING) -> buffer:
        if obj is _NOTHING:
            made = _exposing(np.zeros(0, np.uint8), None)
            made._empty = True
            return made
        return _exposing(_bytes_or_type_error(obj, writable=False, call="MPI.buffer"), obj)

    def __array_finalize__(self, source: Any) -> None:
        # A view of a buffer (a slice, toreadonly) exposes that buffer's bytes, as mpi4py's
        # slices do; a buffer over a plain array (a window's memory) exposes that array.
        if source is not None:
            self._obj = source if isinstance(source, buffer) else getattr(source, "_obj", source)
            self._empty = self._allocated = False

    @staticmethod
    def allocate(nbytes: int, clear: bool = False) -> buffer:
        """Return `nbytes` new bytes, zeroed if `clear`."""
        size = _nbytes(nbytes, "MPI.buffer.allocate")
        memory = (np.zeros if clear else np.empty)(size, np.uint8)
        made = _exposing(memory, memory)
        made._allocated = True
        return made

    @staticmethod
    def frombuffer(obj: Any, readonly: bool = False) -> buffer:
        """Return a buffer over the bytes of `obj`, which must be writable unless `readonly`."""
        return _exposing(_bytes_or_type_error(obj, writable=not readonly, call="MPI.buffer.frombuffer"), obj, readonly)

    @staticmethod
    def fromaddress(address: int, nbytes: int, readonly: bool = False) -> buffer:
        """Return a buffer over `nbytes` bytes at `address` (memory the caller keeps alive)."""
        size = _nbytes(nbytes, "MPI.buffer.fromaddress")
        start = operator.index(address)
        if size and not start:
            raise ValueError("rma.compat: MPI.buffer.fromaddress: expecting a non-NULL address")
        data = np.ctypeslib.as_array((ctypes.c_ubyte * size).from_address(start)) if size else np.zeros(0, np.uint8)
        return _exposing(data, None, readonly)

    @property
    def address(self) -> int:
        if self._empty or not (self.size or self._allocated):
            return 0  # (no memory: MPI's NULL; allocate(0) has an address, as malloc gives one)
        return int(self.__array_interface__["data"][0])

    @property
    def nbytes(self) -> int:
        return 0 if self._empty else int(self.size)

    @property
    def format(self) -> str:
        return "B"

    @property
    def obj(self) -> Any:
        return None if self._empty else self._obj

    @property
    def readonly(self) -> bool:
        return not self._empty and not self.flags.writeable

    def __bool__(self) -> bool:
        return self.size > 0  # (as mpi4py's: a buffer is true when it holds bytes)

    def __repr__(self) -> str:
        return f"<MPI.buffer of {self.size} bytes at {self.address:#x}>"

    __str__ = __repr__

    def __len__(self) -> int:
        return 0 if self._empty else int(self.size)

    def __getitem__(self, item: Any) -> Any:
        if isinstance(item, slice):
            return super().__getitem__(_unit_step(item))
        if _is_index(item):
            return int(super().__getitem__(operator.index(item)))
        return super().__getitem__(_other_index(item))

    def __delitem__(self, item: Any) -> None:
        raise NotImplementedError("rma.compat: MPI.buffer: bytes cannot be deleted from a buffer")

    def __setitem__(self, item: Any, value: Any) -> None:
        if not self.flags.writeable:
            raise TypeError("rma.compat: MPI.buffer: the buffer is read-only")
        if isinstance(item, slice):
            target = super().__getitem__(_unit_step(item))
            if _is_index(value):
                np.ndarray.fill(target, _byte(value))
                return
            data = _bytes_like(value)
            if data.size != target.size:
                raise ValueError(f"rma.compat: MPI.buffer: the slice holds {target.size} bytes, the data {data.size}")
            np.copyto(target.view(np.ndarray), data)
        elif _is_index(item):
            super().__setitem__(operator.index(item), _byte(value))
        else:
            super().__setitem__(_other_index(item), value)

    def tobytes(self, order: Any = None) -> bytes:
        """Return the bytes as a bytes object."""
        return np.ndarray.tobytes(self)

    def toreadonly(self) -> buffer:
        """Return a read-only buffer over the same bytes."""
        view = self.view(buffer)
        view.flags.writeable = False
        view._obj = self._obj
        return view

    def release(self) -> None:
        """Let go of the memory: the buffer reads as empty (address 0, no bytes), as mpi4py's.
        The memory itself goes when the last view of it goes."""
        self._empty = True

    def cast(self, format: str, shape: Any = ...) -> memoryview:  # noqa: A002 - memoryview's name
        """Return a memoryview of the bytes as elements of `format` (and `shape`)."""
        data = memoryview(self.view(np.ndarray)).cast("B")
        return data.cast(format) if shape is ... or shape is None else data.cast(format, shape)

    def __reduce__(self):
        return (bytearray, (self.tobytes(),))


def _bytes_or_type_error(obj: Any, *, writable: bool, call: str) -> np.ndarray:
    """bytes_of, with mpi4py's errors: TypeError for an object that is not a buffer, and
    BufferError for a read-only one where a writable one is needed."""
    if obj is None or not _is_buffer(obj):
        raise TypeError(f"rma.compat: {call}: expected a buffer object, not {type(obj).__name__}")
    try:
        return bytes_of(obj, writable=writable, call=call)
    except MPIException as exc:
        raise BufferError(exc.error_string) from None


def _is_buffer(obj: Any) -> bool:
    if isinstance(obj, np.ndarray):
        return True
    try:
        memoryview(obj)
        return True
    except TypeError:
        return any(hasattr(obj, name) for name in ("__cuda_array_interface__", "__dlpack__", "__array_interface__"))


def _other_index(item: Any) -> Any:
    # Tuples and arrays index as NumPy's do; None (a new axis for NumPy) is no index of bytes.
    if item is None:
        raise TypeError("rma.compat: MPI.buffer: indices must be integers or slices, not None")
    return item


def _exposing(data: np.ndarray, obj: Any, readonly: bool = False) -> buffer:
    made = data.view(buffer)
    made._obj = obj
    if readonly:
        made.flags.writeable = False
    return made


def _is_index(value: Any) -> bool:
    return hasattr(value, "__index__") and not isinstance(value, np.ndarray)


def _nbytes(nbytes: Any, call: str) -> int:
    size = operator.index(nbytes)
    if size < 0:
        raise ValueError(f"rma.compat: {call}: expecting a non-negative size, not {size}")
    return size


def _unit_step(item: slice) -> slice:
    # mpi4py's buffers are contiguous bytes: a slice with a step would not be.
    if item.step not in (None, 1):
        raise IndexError("rma.compat: MPI.buffer: a slice with a step is not supported")
    return item


def _byte(value: Any) -> int:
    # An int, as mpi4py's (NumPy would take 1.5 as 1); NumPy refuses one out of 0 to 255.
    return operator.index(value)


def _bytes_like(value: Any) -> np.ndarray:
    # The bytes of any contiguous buffer (bytes, bytearray, array.array, a NumPy array of any
    # dtype, another MPI.buffer), as mpi4py copies them; not a list, which has no bytes.
    if not isinstance(value, np.ndarray):
        try:
            memoryview(value)
        except TypeError:
            raise TypeError(
                f"rma.compat: MPI.buffer: a bytes-like object is required, not {type(value).__name__}"
            ) from None
    try:
        return bytes_of(value, writable=False, call="MPI.buffer")
    except MPIException as exc:
        raise BufferError(exc.error_string) from None


memory = buffer  # mpi4py's older name


def Alloc_mem(size: int, info: Any = None) -> buffer:  # noqa: N802 - mpi4py's names
    """Return `size` bytes of new memory (MPI_Alloc_mem)."""
    if not isinstance(size, (int, np.integer)) or size < 0:
        raise MPIException(ERR_ARG, f"rma.compat: MPI.Alloc_mem: size must be a non-negative integer, not {size!r}")
    return buffer.allocate(int(size), clear=False)


def Free_mem(mem: buffer) -> None:  # noqa: N802
    """Give back memory from Alloc_mem (MPI_Free_mem); the memory lives on while views of it do."""
    if not isinstance(mem, buffer):
        raise MPIException(
            ERR_ARG, f"rma.compat: MPI.Free_mem: expected memory from MPI.Alloc_mem, not {type(mem).__name__}"
        )
    mem.release()


def Get_address(location: Any) -> int:  # noqa: N802
    """Return the address of the first byte of a buffer (MPI_Get_address)."""
    if isinstance(location, BottomType):
        return 0
    if isinstance(location, buffer):
        return location.address  # (an empty one is at NULL, as MPI's)
    data = bytes_of(location, writable=False, call="MPI.Get_address")
    return int(data.__array_interface__["data"][0]) if data.size else _empty_address(location)


def _empty_address(location: Any) -> int:
    # An empty NumPy array still has an address; other empty buffers are at NULL for MPI.
    interface = getattr(location, "__array_interface__", None)
    return int(interface["data"][0]) if interface else 0


def bytes_of(obj: Any, *, writable: bool, call: str) -> np.ndarray:
    """Return the bytes of a buffer as a one-dimensional uint8 array that shares its memory:
    anything with the buffer protocol (NumPy arrays, array.array, bytearray, MPI.buffer), an
    object that speaks DLPack or the array interface, or BOTTOM (no bytes)."""
    if isinstance(obj, BottomType) or obj is None:
        return np.zeros(0, np.uint8)
    if isinstance(obj, np.ndarray):
        array = obj
    else:
        try:
            array = np.asarray(memoryview(obj))
        except TypeError:
            array = _from_other_protocols(obj, call)
    if writable and not array.flags.writeable:
        raise MPIException(ERR_BUFFER, f"rma.compat: {call}: the buffer is read-only")
    if not array.flags.c_contiguous:
        raise MPIException(ERR_BUFFER, f"rma.compat: {call}: the buffer must be contiguous")
    return array.reshape(-1).view(np.uint8)


def _from_other_protocols(obj: Any, call: str) -> np.ndarray:
    try:
        if hasattr(obj, "__cuda_array_interface__"):
            return cuda_interface_array(obj)
        if hasattr(obj, "__dlpack__"):
            return dlpack_array(obj)
    except TypeError as exc:
        raise MPIException(ERR_BUFFER, f"rma.compat: {call}: {type(obj).__name__}: {exc}") from None
    if hasattr(obj, "__array_interface__"):
        return np.asarray(obj)
    raise MPIException(ERR_BUFFER, f"rma.compat: {call}: expected a buffer, not {type(obj).__name__}")
