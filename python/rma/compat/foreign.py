"""Memory that other array protocols describe: DLPack (__dlpack__) and the CUDA array
interface (__cuda_array_interface__), as NumPy arrays that keep their producer alive.

DLPack: the producer's memory is read without consuming the capsule.

NumPy's from_dlpack consumes the capsule and later calls the producer's deleter; some producers
(mpi4py's own test arrays among them) free the tensor when their capsule goes, so that late call
lands on freed memory. As mpi4py does, the facade only reads the tensor's description from the
capsule and keeps the producer itself alive, which owns the memory: the capsule is left
unconsumed, and its own destructor releases the tensor as the producer expects.
"""

from __future__ import annotations

import ctypes
import os
from typing import Any

import numpy as np

__all__ = ["dlpack_array", "cuda_interface_array"]


class _Device(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _Tensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", _Device),
        ("ndim", ctypes.c_int32),
        ("dtype", _DataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class _Managed(ctypes.Structure):
    _fields_ = [("dl_tensor", _Tensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


class _Version(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class _ManagedVersioned(ctypes.Structure):
    _fields_ = [
        ("version", _Version),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", ctypes.c_void_p),
        ("flags", ctypes.c_uint64),
        ("dl_tensor", _Tensor),
    ]


_READ_ONLY = 1  # DLPack 1.0's flag bit
_CPU = 1
_KINDS = {0: "i", 1: "u", 2: "f", 5: "c", 6: "b"}  # kDLInt, kDLUInt, kDLFloat, kDLComplex, kDLBool

_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_capsule_name = ctypes.pythonapi.PyCapsule_GetName
_capsule_name.restype = ctypes.c_char_p
_capsule_name.argtypes = [ctypes.py_object]


class _Held:
    """The array interface of the tensor's memory, holding its producer alive."""

    def __init__(self, address: int, shape: tuple[int, ...], typestr: str, readonly: bool, owner: Any) -> None:
        self.__array_interface__ = {"data": (address, readonly), "shape": shape, "typestr": typestr, "version": 3}
        self.owner = owner


def dlpack_array(obj: Any) -> np.ndarray:
    """A NumPy array over the memory of a CPU DLPack producer (C-contiguous tensors only)."""
    capsule = obj.__dlpack__()
    name = _capsule_name(capsule)
    if name == b"dltensor_versioned":
        managed = _ManagedVersioned.from_address(_capsule_pointer(capsule, name))
        readonly = bool(managed.flags & _READ_ONLY)
    elif name == b"dltensor":
        managed = _Managed.from_address(_capsule_pointer(capsule, name))
        readonly = False
    else:
        raise TypeError(f"__dlpack__ gave a capsule named {name!r}, not a DLPack tensor")
    tensor = managed.dl_tensor
    if tensor.device.device_type != _CPU:
        raise TypeError("the DLPack tensor is not in host memory")
    shape = tuple(tensor.shape[i] for i in range(tensor.ndim))
    kind, bits, lanes = _KINDS.get(tensor.dtype.code), tensor.dtype.bits, tensor.dtype.lanes
    if kind is None or bits % 8 or lanes not in (1, 2) or (lanes == 2 and kind != "f"):
        raise TypeError(f"DLPack element type (code {tensor.dtype.code}, {bits} bits x {lanes}) has no NumPy dtype")
    if lanes == 2:
        kind = "c"  # (two float lanes: a complex number, as long double complex is sent)
    itemsize = bits // 8 * lanes
    if tensor.strides:
        expected = 1
        for axis in reversed(range(tensor.ndim)):
            if shape[axis] > 1 and tensor.strides[axis] != expected:
                raise TypeError("the DLPack tensor is not C-contiguous")
            expected *= shape[axis]
    address = (tensor.data or 0) + tensor.byte_offset
    typestr = "|b1" if kind == "b" else f"={kind}{itemsize}"
    try:
        np.dtype(typestr)
    except TypeError:
        typestr = f"|V{itemsize}"  # (a size NumPy has no number type of: its bytes)
    if address == 0:
        return np.zeros(shape, np.dtype(typestr))
    return np.asarray(_Held(address, shape, typestr, readonly, obj))


def cuda_interface_array(obj: Any) -> np.ndarray:
    """A NumPy array over memory described by __cuda_array_interface__, when that memory is
    host memory this process can read (CUDA host or managed memory, or a host array that
    describes itself so). rma moves host memory only: device memory is refused, not read."""
    interface = obj.__cuda_array_interface__
    address, readonly = interface["data"]
    shape = tuple(interface["shape"])
    typestr = interface["typestr"]
    if interface.get("strides") is not None:
        raise TypeError("a strided __cuda_array_interface__ is not supported")
    nbytes = int(np.prod(shape, dtype=np.int64)) * np.dtype(typestr).itemsize
    if nbytes == 0 or not address:
        return np.zeros(shape, np.dtype(typestr))
    if not (_readable(address) and _readable(address + nbytes - 1)):
        raise TypeError("its __cuda_array_interface__ memory is device memory (rma moves host memory only)")
    return np.asarray(_Held(address, shape, typestr, bool(readonly), obj))


_self_memory: int | None = None


def _readable(address: int) -> bool:
    """Whether this process can read the byte at `address` (asked of the kernel, so that
    device memory or a bad pointer is refused instead of faulting)."""
    global _self_memory
    if _self_memory is None:
        _self_memory = os.open("/proc/self/mem", os.O_RDONLY | os.O_CLOEXEC)
    try:
        return len(os.pread(_self_memory, 1, address)) == 1
    except OSError:
        return False
