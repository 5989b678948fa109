"""Joining a job that a PMIx launcher started (Open MPI's mpirun and prterun, Slurm's
`srun --mpi=pmix`): its rank, size and key-value exchange come from the launcher's PMIx server
instead of rmarun's rendezvous store.

PmixClient offers what rma.init() uses of a StoreClient (put, get_many, on_peer_dead,
unreachable, close), over PMIx_Put, PMIx_Commit, PMIx_Fence (collecting the data) and PMIx_Get.
The client library (Debian's libpmix2) is loaded at run time through ctypes, so rma installs
and runs without it; only a process that a PMIx launcher started needs it.

A dying rank: the launchers do not tell the others in a way rma can use (Open MPI 4's mpirun
sends no PMIx event, and kills the job unless told not to; srun lets the others run on by
default). So rank 0 serves a store used only to watch the ranks (watch_departures): every rank
holds a connection to it, and a connection that ends without a goodbye is announced to the
others, whose blocked calls end with PeerError, as under rmarun. Its address and secret travel
through PMIx.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys
import time
from collections.abc import Callable

from ..errors import BootstrapError
from .store_client import StoreClient
from .store_protocol import address_towards
from .store_server import StoreServer

__all__ = ["started_by_pmix", "loadable_library", "PmixClient"]

# pmix_common.h (PMIx 4): the sizes and codes this client uses.
_NSLEN = 255
_KEYLEN = 511
_RANK_WILDCARD = 0xFFFFFFFE
_SUCCESS = 0
_BOOL, _INT, _UINT32, _BYTE_OBJECT = 1, 6, 14, 27
_GLOBAL = 3  # pmix_scope_t: shared with every process of the job, on every node
_JOB_SIZE = b"pmix.job.size"
_COLLECT_DATA = b"pmix.collect"
_TIMEOUT = b"pmix.timeout"  # (int) seconds before a fence gives up; 0: never
_KEY_PREFIX = "rma."  # our keys, apart from the launcher's
_WATCH_JOIN_TIMEOUT = 10.0  # seconds for a rank to reach rank 0's watch
_WATCH_LINGER = 10.0  # seconds rank 0 serves the watch at the end for ranks still finishing


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
        ("integer", ctypes.c_int),
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


def loadable_library() -> str | None:
    """Return the name of the PMIx client library this process would load (the first of the
    system's libpmix, libpmix.so.2, libpmix.so that loads), or None when none does."""
    names = [ctypes.util.find_library("pmix"), "libpmix.so.2", "libpmix.so"]
    for name in filter(None, names):
        try:
            ctypes.CDLL(name)
        except OSError:
            continue
        return name
    return None


def _library() -> ctypes.CDLL:
    name = loadable_library()
    if name is not None:
        return ctypes.CDLL(name)
    raise BootstrapError(
        "rma.init: a PMIx launcher started this process (PMIX_NAMESPACE is set), but the PMIx "
        "client library is not installed here: apt-get install libpmix2 (or start the job with rmarun)"
    )


class PmixClient:
    """This process's connection to its launcher's PMIx server, as rma.init() uses a store."""

    def __init__(self, timeout: float = 0.0) -> None:
        """timeout: RMA_TIMEOUT, the seconds after which a fence gives up (0: never)."""
        self._fence_seconds = int(timeout + 0.999) if timeout > 0 else 0
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
        self._watch_server: StoreServer | None = None  # rank 0's, see watch_departures
        self._watch: StoreClient | None = None
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
            self._fence()
        values = []
        for key in keys:
            name, _, rank = key.partition("/")
            value = self._get(_Proc(self._me.nspace, int(rank)), (_KEY_PREFIX + name).encode())
            if value.type != _BYTE_OBJECT:
                raise BootstrapError(f"rma.init: PMIx gave {key} as type {value.type}, not bytes")
            values.append(ctypes.string_at(value.data.bo.bytes, value.data.bo.size))
        return values

    def _fence(self) -> None:
        """Commit what this rank put and wait for every rank's (collective)."""
        self._check(self._lib.PMIx_Commit(), "PMIx_Commit")
        options = (_Info * 2)(_Info(_COLLECT_DATA, 0, _Value(_BOOL)), _Info(_TIMEOUT, 0, _Value(_INT)))
        options[0].value.data.flag = True
        # A rank that failed before the fence (and srun lets the others run on) must not leave
        # them waiting forever: the fence gives up after RMA_TIMEOUT.
        options[1].value.data.integer = self._fence_seconds
        self._check(self._lib.PMIx_Fence(None, 0, options, 2), "PMIx_Fence (the other ranks did not all come)")
        self._fenced = True

    def watch_departures(self, hosts: list[str]) -> None:
        """Start watching the ranks (collective; module docstring): rank 0 serves the watch, on
        an address that the ranks on `hosts` (each rank's host name) reach."""
        if self.rank == 0:
            # A failure here goes to every rank through the fence, which they are waiting in.
            try:
                self._watch_server = StoreServer(self.size, host=_watch_address(hosts))
                self._watch_server.start()
                found = f"{self._watch_server.secret} {self._watch_server.reachable_address}"
            except (BootstrapError, OSError) as exc:
                found = f"error {exc}"
            self.put("watch/0", found.encode())
        self._fence()
        secret, address = self.get_many(["watch/0"])[0].decode().split(" ", 1)
        if secret == "error":
            raise BootstrapError(f"rma.init: rank 0 could not start the watch of the ranks: {address}")
        try:
            self._watch = StoreClient(address, secret, self.rank, timeout=_WATCH_JOIN_TIMEOUT)
        except BootstrapError as exc:
            # (A firewall between the hosts, say.) The job runs; only deaths go unnoticed.
            reason = str(exc).rsplit(": ", 1)[-1]
            print(
                f"rma.init: rank {self.rank} cannot reach rank 0's watch of the ranks at {address} ({reason}); "
                "a rank that dies will not end this rank's blocked calls (they end at RMA_TIMEOUT)",
                file=sys.stderr,
                flush=True,
            )

    def on_peer_dead(self, callback: Callable[[int], None]) -> None:
        """Call callback(rank) when a rank dies (after watch_departures). The watch itself is
        rank 0's: losing it means rank 0 is gone."""
        if self._watch is not None:
            self._watch.on_peer_dead(lambda rank: callback(0 if rank == -1 else rank))

    def unreachable(self, rank: int) -> bool:
        """Whether a rank announced dead went silent (its host, or the link) rather than ended."""
        return self._watch is not None and self._watch.unreachable(-1 if rank == 0 else rank)

    def close(self, clean: bool = True) -> None:
        if not self._open:
            return
        self._open = False
        if self._watch is not None:
            self._watch.close(clean)
        if self._watch_server is not None:
            # Rank 0 serves the watch until the others said goodbye: ending it earlier would
            # announce rank 0 dead to a rank that is still finishing.
            deadline = time.monotonic() + _WATCH_LINGER if clean else 0.0
            while self._watch_server.ranks_connected() and time.monotonic() < deadline:
                time.sleep(0.01)
            self._watch_server.close()
        self._lib.PMIx_Finalize(None, 0)


def _watch_address(hosts: list[str]) -> str:
    """Where rank 0 serves the watch: loopback when the job is on one host, else its address on
    the route to another rank's host (all addresses when that host's name does not resolve)."""
    others = [host for host in hosts if host != hosts[0]]
    if not others:
        return "127.0.0.1"
    try:
        return address_towards(others[0])
    except OSError:
        return "0.0.0.0"  # (the ranks are then given this machine's name: StoreServer)
