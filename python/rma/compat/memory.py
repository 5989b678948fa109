"""Memory as mpi4py hands it around: MPI.buffer, Alloc_mem/Free_mem, Get_address, BOTTOM, and
the one function that turns any buffer a program passes into a NumPy view of its bytes."""

from __future__ import annotations

from typing import Any

import numpy as np

from .errors import ERR_ARG, ERR_BUFFER
from .errors import Exception as MPIException
from .foreign import cuda_interface_array, dlpack_array

__all__ = ["buffer", "memory", "Alloc_mem", "Free_mem", "Get_address", "BOTTOM", "IN_PLACE", "bytes_of"]


class _Bottom(int):
    """MPI.BOTTOM: address zero, a buffer of no bytes."""

    def __repr__(self) -> str:
        return "BOTTOM"


class _InPlace(int):
    """MPI.IN_PLACE: "the receive buffer is also the send buffer" in collectives."""

    def __repr__(self) -> str:
        return "IN_PLACE"


BOTTOM = _Bottom(0)
IN_PLACE = _InPlace(-1)


class buffer(np.ndarray):  # noqa: N801 - mpi4py's name: MPI.buffer
    """Bytes of memory, as mpi4py's MPI.buffer: a one-dimensional array of unsigned bytes that
    any buffer-taking call accepts, with mpi4py's `address`, `format`, `obj` and `release()`."""

    def __new__(cls, obj: Any = None) -> buffer:
        data = np.zeros(0, np.uint8) if obj is None else bytes_of(obj, writable=False, call="MPI.buffer")
        return data.view(cls)

    @staticmethod
    def allocate(nbytes: int, clear: bool = False) -> buffer:
        return (np.zeros if clear else np.empty)(int(nbytes), np.uint8).view(buffer)

    @property
    def address(self) -> int:
        return int(self.__array_interface__["data"][0]) if self.size else 0

    @property
    def format(self) -> str:
        return "B"

    @property
    def obj(self) -> Any:
        return self.base

    @property
    def readonly(self) -> bool:
        return not self.flags.writeable

    def __bool__(self) -> bool:
        return self.size > 0  # (as mpi4py's: a buffer is true when it holds bytes)

    def release(self) -> None:
        """Nothing to give back early: the memory goes when the last view of it goes."""

    def cast(self, format: str, shape: Any = None) -> memoryview:  # noqa: A002 - memoryview's name
        view = memoryview(np.asarray(self)).cast("B").cast(format)
        return view if shape is None else view.cast(format, shape)

    def __reduce__(self):
        return (bytearray, (self.tobytes(),))


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


def Get_address(location: Any) -> int:  # noqa: N802
    """Return the address of the first byte of a buffer (MPI_Get_address)."""
    if isinstance(location, _Bottom):
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
    if isinstance(obj, _Bottom) or obj is None:
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
