"""Joining a job that a PMIx launcher started (Open MPI's mpirun and prterun, Slurm's
`srun --mpi=pmix`): its rank, size and key-value exchange come from the launcher's PMIx server
instead of rmarun's rendezvous store.

PmixClient offers what rma.init() uses of a StoreClient (put, get_many, on_peer_dead,
unreachable, close), over PMIx_Put, PMIx_Commit, PMIx_Fence (collecting the data) and PMIx_Get.
The client library (Debian's libpmix2) is loaded at run time through ctypes, so rma installs
and runs without it; only a process that a PMIx launcher started needs it.

A dying rank: PMIx launchers end the whole job when a rank fails (mpirun kills the others),
so no death notices come through here; a rank's blocked calls end with the job.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from collections.abc import Callable

from ..errors import BootstrapError

__all__ = ["started_by_pmix", "PmixClient"]

# pmix_common.h (PMIx 4): the sizes and codes this client uses.
_NSLEN = 255
_KEYLEN = 511
_RANK_WILDCARD = 0xFFFFFFFE
_SUCCESS = 0
_BOOL, _UINT32, _BYTE_OBJECT = 1, 14, 27
_GLOBAL = 3  # pmix_scope_t: shared with every process of the job, on every node
_JOB_SIZE = b"pmix.job.size"
_COLLECT_DATA = b"pmix.collect"
_KEY_PREFIX = "rma."  # our keys, apart from the launcher's


class _Proc(ctypes.Structure):
    _fields_ = [("nspace", ctypes.c_char * (_NSLEN + 1)), ("rank", ctypes.c_uint32)]


class _ByteObject(ctypes.Structure):
    _fields_ = [("bytes", ctypes.c_void_p), ("size", ctypes.c_size_t)]


class _Envar(ctypes.Structure):
    # The union's largest member: it sets the size of pmix_value_t (32 bytes).
    _fields_ = [("envar", ctypes.c_void_p), ("value", ctypes.c_void_p), ("separator", ctypes.c_char)]


class _Data(ctypes.Union):
    _fields_ = [
        ("flag", ctypes.c_bool),
        ("uint32", ctypes.c_uint32),
        ("bo", _ByteObject),
        ("envar", _Envar),
    ]


class _Value(ctypes.Structure):
    _fields_ = [("type", ctypes.c_uint16), ("data", _Data)]


class _Info(ctypes.Structure):
    _fields_ = [("key", ctypes.c_char * (_KEYLEN + 1)), ("flags", ctypes.c_uint32), ("value", _Value)]


def started_by_pmix() -> bool:
    """Whether a PMIx launcher started this process (its server's coordinates are set)."""
    return bool(os.environ.get("PMIX_NAMESPACE")) and bool(os.environ.get("PMIX_RANK"))


def _library() -> ctypes.CDLL:
    names = [ctypes.util.find_library("pmix"), "libpmix.so.2", "libpmix.so"]
    for name in filter(None, names):
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    raise BootstrapError(
        "rma.init: a PMIx launcher started this process (PMIX_NAMESPACE is set), but the PMIx "
        "client library is not installed here: apt-get install libpmix2 (or start the job with rmarun)"
    )


class PmixClient:
    """This process's connection to its launcher's PMIx server, as rma.init() uses a store."""

    def __init__(self) -> None:
        self._lib = _library()
        self._lib.PMIx_Init.argtypes = [ctypes.POINTER(_Proc), ctypes.c_void_p, ctypes.c_size_t]
        self._lib.PMIx_Put.argtypes = [ctypes.c_uint8, ctypes.c_char_p, ctypes.POINTER(_Value)]
        self._lib.PMIx_Fence.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(_Info), ctypes.c_size_t]
        result = ctypes.POINTER(ctypes.POINTER(_Value))
        self._lib.PMIx_Get.argtypes = [ctypes.POINTER(_Proc), ctypes.c_char_p, ctypes.c_void_p, ctypes.c_size_t, result]
        self._lib.PMIx_Finalize.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        self._me = _Proc()
        self._check(self._lib.PMIx_Init(ctypes.byref(self._me), None, 0), "PMIx_Init")
        self._open = True
        self._fenced = True  # nothing put since the last fence
        self.rank = int(self._me.rank)
        job = _Proc(self._me.nspace, _RANK_WILDCARD)
        value = self._get(job, _JOB_SIZE)
        if value.type != _UINT32:
            raise BootstrapError(f"rma.init: PMIx gave the job's size as type {value.type}, not uint32")
        self.size = int(value.data.uint32)

    @staticmethod
    def _check(status: int, call: str) -> None:
        if status != _SUCCESS:
            raise BootstrapError(f"rma.init: {call} failed (PMIx status {status})")

    def _get(self, proc: _Proc, key: bytes) -> _Value:
        result = ctypes.POINTER(_Value)()
        status = self._lib.PMIx_Get(ctypes.byref(proc), key, None, 0, ctypes.byref(result))
        self._check(status, f"PMIx_Get of {key.decode()} from rank {proc.rank}")
        return result.contents  # (PMIx's copy; left to it, a few per job)

    def put(self, key: str, value: bytes) -> None:
        """Publish value under key ("address/3": the part before "/" is the key, made ours)."""
        name = (_KEY_PREFIX + key.partition("/")[0]).encode()
        buffer = ctypes.create_string_buffer(value, len(value))
        entry = _Value(_BYTE_OBJECT)
        entry.data.bo = _ByteObject(ctypes.cast(buffer, ctypes.c_void_p), len(value))
        self._check(self._lib.PMIx_Put(_GLOBAL, name, ctypes.byref(entry)), f"PMIx_Put of {key}")
        self._fenced = False

    def get_many(self, keys: list[str], timeout: float | None = None) -> list[bytes]:
        """Every rank's value of keys "name/rank"; a fence with every rank first (collective)."""
        if not self._fenced:
            self._check(self._lib.PMIx_Commit(), "PMIx_Commit")
            collect = _Info(_COLLECT_DATA, 0, _Value(_BOOL))
            collect.value.data.flag = True
            self._check(self._lib.PMIx_Fence(None, 0, ctypes.byref(collect), 1), "PMIx_Fence")
            self._fenced = True
        values = []
        for key in keys:
            name, _, rank = key.partition("/")
            value = self._get(_Proc(self._me.nspace, int(rank)), (_KEY_PREFIX + name).encode())
            if value.type != _BYTE_OBJECT:
                raise BootstrapError(f"rma.init: PMIx gave {key} as type {value.type}, not bytes")
            values.append(ctypes.string_at(value.data.bo.bytes, value.data.bo.size))
        return values

    def on_peer_dead(self, callback: Callable[[int], None]) -> None:
        """No notices: the launcher ends the job when a rank dies (module docstring)."""

    def unreachable(self, rank: int) -> bool:
        return False

    def close(self, clean: bool = True) -> None:
        if self._open:
            self._open = False
            self._lib.PMIx_Finalize(None, 0)
