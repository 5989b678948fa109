"""rma.Window: memory that the ranks of a communicator expose to each other.

Every check that needs NumPy happens here, before anything moves: the origin's dtype and size,
the op against the dtype, the target region (a displacement, or `target=` as a NumPy index,
computed without touching memory). The core (src/core/window) checks the epoch and the region's
bounds, moves the data and applies the ops.

Buffers: communication calls return before the data moves. The arrays the core reads from or
writes to are kept in `_pending` until the epoch's synchronization has completed them, so a
temporary origin (`win.put(np.arange(10), 1)`) or a dropped result array stays valid.
"""

from __future__ import annotations

import collections
import operator
import os
import socket
import time
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from ._native import _core
from .comm import Comm
from .errors import EpochError, RMAError, TargetRangeError
from .group import Group
from .ops import (
    COMPARE_TYPES,
    ELEMENT_DTYPES,
    LOCK_EXCLUSIVE,
    LOCK_SHARED,
    PROC_NULL,
    Mode,
    Op,
    canonical_dtype,
    check_op,
    element_type,
)

__all__ = ["Window", "Request"]

_KNOWN_HINTS = {"no_locks": False}
# Methods whose plain calls go straight to the core (src/bindings/register_direct_calls.cpp).
_FAST_METHODS = (
    *("put", "get", "accumulate", "get_accumulate", "fetch_and_op", "compare_and_swap", "flush"),
    *("fence", "post", "start", "complete", "wait", "lock", "unlock"),
)


class _Epoch:
    """What an epoch-opening call returns: a context manager whose exit makes the closing call.

    A window keeps one per kind of epoch (and per locked rank) and hands it out again, which
    saves an allocation on every fence; it refers to its window weakly, so no cycle keeps a
    dropped window alive.
    """

    __slots__ = ("_window", "_close", "_args")

    def __init__(self, window: Window, close: Callable[..., None], *args: Any) -> None:
        self._window = weakref.ref(window)
        self._close = close  # a Window method, called with the window and args
        self._args = args

    def __enter__(self) -> Window:
        return self._window()

    def __exit__(self, *exc_info: object) -> bool:
        window = self._window()
        if window is not None:
            self._close(window, *self._args)
        return False


class Request:
    """A request-based call (rput, rget, raccumulate, rget_accumulate) until it completes."""

    __slots__ = ("_window", "_rank", "_result", "_done")

    def __init__(self, window: Window, rank: int, result: np.ndarray | None) -> None:
        self._window = window
        self._rank = rank
        self._result = result
        self._done = rank == PROC_NULL

    def test(self) -> bool:
        """Return True if the call has completed (at the origin and the target); never waits."""
        if not self._done and self._window._core.target_idle(self._rank):
            self._finish()
        return self._done

    def wait(self) -> np.ndarray | None:
        """Wait for the call to complete; return the result array of rget/rget_accumulate."""
        if not self.test():
            core = self._window._core
            if core.in_passive_epoch(self._rank):
                core.flush(self._rank)
            self._finish()
        return self._result

    def _finish(self) -> None:
        # Every call to this rank has completed: results that needed a contiguous stand-in are
        # copied back now, and only now (a later unlock must not copy them again).
        for finish in self._window._after_sync.pop(self._rank, ()):
            finish()
        self._done = True

    def __repr__(self) -> str:
        return f"<rma.Request to rank {self._rank}, {'done' if self._done else 'pending'}>"


_COMPARISONS = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


class Window:
    """Expose memory of every rank of a communicator to one-sided communication.

    Make one with `Window.allocate` (memory owned by the library) or `Window.create` (over an
    array of yours); both are collective. Open epochs with `fence`, then `put`, `get`,
    `accumulate`... to any rank; the data has moved at the next synchronization.
    """

    def __init__(self, *_: object, **__: object) -> None:
        raise TypeError("use rma.Window.allocate(...) or rma.Window.create(...)")

    # ---- creation ----

    @classmethod
    def allocate(
        cls,
        comm: Comm,
        shape: int | tuple[int, ...],
        dtype: Any = np.uint8,
        *,
        disp_unit: int | None = None,
        info: dict | None = None,
    ) -> Window:
        """Return a window over new, zero-filled, page-aligned memory of `shape` and `dtype`.

        Collective over `comm`; shapes may differ between ranks (0 elements is fine).
        """
        dtype = _fixed_dtype(dtype, "allocate")
        shape = _shape(shape)
        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        # On one host the memory goes in shared segments every rank maps (RMA_TRANSPORT=libfabric
        # keeps it private, reached through libfabric).
        shared = _transport(comm) == "shared-memory"
        memory = _core.SharedSegment.create(nbytes) if shared else _core.WindowMemory(nbytes)
        local = np.frombuffer(memory, dtype=np.uint8).view(dtype).reshape(shape)
        return cls._build(comm, local, memory.address, memory, "allocate", disp_unit, info, shared)

    @classmethod
    def allocate_shared(
        cls, comm: Comm, shape: int | tuple[int, ...], dtype: Any = np.uint8, *, info: dict | None = None
    ) -> Window:
        """Return a window like allocate(), whose every rank's memory win.shared(rank) shows directly.

        Collective; every rank of `comm` must run on one host.
        """
        if not _one_host(comm):
            raise ValueError("rma: Window.allocate_shared: every rank of comm must run on one host")
        dtype = _fixed_dtype(dtype, "allocate_shared")
        shape = _shape(shape)
        segment = _core.SharedSegment.create(int(np.prod(shape, dtype=np.int64)) * dtype.itemsize)
        local = np.frombuffer(segment, dtype=np.uint8).view(dtype).reshape(shape)
        return cls._build(comm, local, segment.address, segment, "shared", None, info, True)

    def shared(self, rank: int) -> np.ndarray:
        """Return a direct load/store view of `rank`'s memory (allocate_shared windows)."""
        rank = self._rank(rank, "shared", allow_null=False)
        if self._flavor != "shared":
            raise RMAError(f"rma: win.shared: only a window from Window.allocate_shared has it, not this {self._flavor} one")
        if rank == self._comm.rank:
            return self._local
        shape, dtype, _ = self._layout[rank]
        return np.frombuffer(self._core.segment(rank), dtype=np.uint8).view(dtype).reshape(shape)

    @classmethod
    def create(
        cls, comm: Comm, array: np.ndarray, *, disp_unit: int | None = None, info: dict | None = None
    ) -> Window:
        """Return a window over `array` (writable, C-contiguous), which the window keeps alive.

        Collective over `comm`.
        """
        if not isinstance(array, np.ndarray):
            raise TypeError(f"rma: Window.create: expected a NumPy array, got {type(array).__name__}")
        if not array.flags.writeable:
            raise ValueError("rma: Window.create: the array is not writable")
        if not array.flags.c_contiguous:
            raise ValueError("rma: Window.create: the array is not C-contiguous (use np.ascontiguousarray)")
        _fixed_dtype(array.dtype, "create")
        address = array.__array_interface__["data"][0]
        # On one host, peers copy straight into and out of the array (process_vm_writev/readv),
        # and synchronize in shared memory.
        same_host = isinstance(comm, Comm) and _transport(comm) == "shared-memory"
        return cls._build(comm, array, address, array, "create", disp_unit, info, same_host=same_host)

    @classmethod
    def create_dynamic(cls, comm: Comm, *, info: dict | None = None) -> Window:
        """Return a window that exposes, on each rank, the memory it attaches later.

        Collective over `comm`. Displacements are bytes (disp_unit 1), given by attach();
        `target=` does not apply.
        """
        return cls._build(comm, np.zeros(0, np.uint8), 0, None, "dynamic", 1, info)

    def attach(self, array: np.ndarray) -> int:
        """Expose `array` (writable, C-contiguous) to the other ranks; return its displacement.

        Publish the displacement (with comm.bcast, for instance): others pass it as target_disp.
        The window keeps the array alive until detach().
        """
        self._check_open("attach")
        if self._flavor != "dynamic":
            raise RMAError(f"rma: win.attach: only a dynamic window takes attach, not this {self._flavor} one")
        if not isinstance(array, np.ndarray):
            raise TypeError(f"rma: win.attach: expected a NumPy array, got {type(array).__name__}")
        if not array.flags.writeable or not array.flags.c_contiguous:
            raise ValueError("rma: win.attach: the array must be writable and C-contiguous")
        address = _address(array)
        self._core.attach(address, array.nbytes)
        self._attached[address] = array
        return address

    def detach(self, array: np.ndarray) -> None:
        """Withdraw memory attached with attach(array)."""
        self._check_open("detach")
        address = _address(array) if isinstance(array, np.ndarray) else None
        if address not in self._attached:
            raise ValueError("rma: win.detach: that array is not attached to this window")
        self._core.detach(address)
        del self._attached[address]

    @classmethod
    def _build(cls, comm, local, address, owner, flavor, disp_unit, info, shared=False, same_host=False) -> Window:
        if not isinstance(comm, Comm):
            raise TypeError(f"rma: Window.{flavor}: comm must be an rma.Comm, not {type(comm).__name__}")
        unit = local.dtype.itemsize if disp_unit is None else _positive(disp_unit, flavor, "disp_unit")
        hints = _hints(info, flavor)
        # Every rank learns every rank's shape, dtype and displacement unit.
        layout = comm.allgather((local.shape, local.dtype, unit))
        if flavor == "dynamic":
            core = _core.Window.create_dynamic(comm._core, "dynamic")
        elif shared:
            core = _core.Window.create_shared(comm._core, owner, f"{flavor}, {local.dtype}, shape {local.shape}, shared memory")
        else:
            core = _core.Window.create(
                comm._core, address, local.nbytes, f"{flavor}, {local.dtype}, shape {local.shape}", same_host
            )
        window = object.__new__(cls)
        window._core = core
        window._comm = comm
        window._size = comm.size
        window._local = local
        window._owner = owner  # keeps the memory alive as long as the window
        window._flavor = flavor
        window._disp_unit = unit
        window._info = hints
        window._transport = "shared-memory" if shared or same_host else "libfabric"
        window._layout = [(tuple(shape), canonical_dtype(np.dtype(dt)), u) for shape, dt, u in layout]
        # The hottest methods get fast fronts on the instance (they shadow the methods below):
        # plain calls go straight to the core, data calls to a shared window without even a
        # region; the fronts pass anything else, untouched, to the method itself.
        direct = _core.DirectCalls(
            core, [(dt, u, dt == np.uint8) for _, dt, u in window._layout], ELEMENT_DTYPES, hints["no_locks"]
        )
        for name in _FAST_METHODS:
            setattr(window, name, _core.fast_method(direct, name, getattr(cls, name), window))
        # By target rank: arrays in use by calls not yet completed, and the copies into
        # non-contiguous results to make once their data is there.
        window._pending = collections.defaultdict(list)
        window._after_sync = collections.defaultdict(list)
        window._attached = {}  # a dynamic window's memory, by address
        window._freed = False
        # What the epoch-opening calls return (lock's, per rank, as ranks get locked).
        window._epochs = {
            "fence": _Epoch(window, Window._end_fence_epoch),
            "post": _Epoch(window, Window.wait),
            "start": _Epoch(window, Window.complete),
            "lock_all": _Epoch(window, Window.unlock_all),
        }
        return window

    # ---- attributes ----

    @property
    def local(self) -> np.ndarray:
        """Return this rank's window memory as a NumPy array (zero-copy)."""
        self._check_open("local")
        return self._local

    @property
    def shape(self) -> tuple[int, ...]:
        """Return the shape of this rank's window."""
        return self._local.shape

    @property
    def dtype(self) -> np.dtype:
        """Return the dtype of this rank's window."""
        return self._local.dtype

    @property
    def nbytes(self) -> int:
        """Return the size of this rank's window in bytes."""
        return self._local.nbytes

    @property
    def disp_unit(self) -> int:
        """Return the bytes one displacement counts on this rank (the itemsize by default)."""
        return self._disp_unit

    def target_shape(self, rank: int) -> tuple[int, ...]:
        """Return the shape of `rank`'s window."""
        return self._layout[self._rank(rank, "target_shape", allow_null=False)][0]

    @property
    def model(self) -> str:
        """Return the memory model: "unified" (puts land in the memory that win.local shows)."""
        return "unified"

    @property
    def info(self) -> dict:
        """Return the hints in force, and the transport the window's calls use."""
        return {**self._info, "transport": self._transport}

    @property
    def transport(self) -> str:
        """Return how calls reach the other ranks: "shared-memory" or "libfabric".

        "shared-memory" (every rank on this host): synchronization through shared memory;
        puts and gets are memcpy (allocate, allocate_shared) or a direct copy between the
        processes (create); accumulates are CPU operations under the target's lock (allocate)
        or messages the target applies (create).
        """
        return self._transport

    @property
    def comm(self) -> Comm:
        """Return the communicator the window was made over."""
        return self._comm

    @property
    def group(self) -> Group:
        """Return the group of the window's ranks."""
        return self._comm.group

    # ---- communication calls ----

    def put(self, origin: Any, target_rank: int, target_disp: int = 0, *, target: Any = None) -> None:
        """Start writing `origin` into `target_rank`'s window; it lands by the next synchronization."""
        rank = self._rank(target_rank, "put")
        data = self._origin(origin, rank, "put", raw_ok=self._by_displacement(target, "put"))
        region = self._region("put", rank, target_disp, target, data)
        self._hold(rank, data)
        self._core.put(rank, data, region)

    def get(self, result: np.ndarray, target_rank: int, target_disp: int = 0, *, target: Any = None) -> None:
        """Start reading `target_rank`'s window into `result`; filled by the next synchronization."""
        rank = self._rank(target_rank, "get")
        self._check_result(result, rank, "get", raw_ok=self._by_displacement(target, "get"))
        out = self._landing(result)
        region = self._region("get", rank, target_disp, target, out)
        self._core.get(rank, out, region)
        self._keep(rank, result, out)

    def accumulate(
        self, origin: Any, target_rank: int, target_disp: int = 0, op: Op = Op.SUM, *, target: Any = None
    ) -> None:
        """Start combining `origin` into `target_rank`'s window element by element with `op`."""
        rank = self._rank(target_rank, "accumulate")
        data = self._origin(origin, rank, "accumulate", raw_ok=self._by_displacement(target, "accumulate"))
        op = check_op(op, data.dtype, "accumulate")
        region = self._region("accumulate", rank, target_disp, target, data)
        self._hold(rank, data)
        self._core.accumulate(rank, int(op), element_type(data.dtype), data, region)

    def get_accumulate(
        self,
        origin: Any,
        result: np.ndarray,
        target_rank: int,
        target_disp: int = 0,
        op: Op = Op.SUM,
        *,
        target: Any = None,
    ) -> None:
        """Start combining `origin` into the target with `op`, fetching the old values into `result`."""
        rank = self._rank(target_rank, "get_accumulate")
        self._check_result(result, rank, "get_accumulate", raw_ok=self._by_displacement(target, "get_accumulate"))
        data = self._origin(origin, rank, "get_accumulate", raw_ok=False, dtype=result.dtype)
        op = check_op(op, result.dtype, "get_accumulate")
        if data.size != result.size:
            raise ValueError(
                f"rma: win.get_accumulate: origin has {data.size} elements, result {result.size}"
            )
        out = self._landing(result)
        region = self._region("get_accumulate", rank, target_disp, target, out)
        self._hold(rank, data)
        self._core.get_accumulate(rank, int(op), element_type(out.dtype), data, out, region)
        self._keep(rank, result, out)

    def fetch_and_op(
        self, origin: Any, result: np.ndarray, target_rank: int, target_disp: int = 0, op: Op = Op.SUM
    ) -> None:
        """Start applying `op` with `origin` to one target element, fetching its old value into `result`."""
        self._single(result, "fetch_and_op", "result")
        data = np.asarray(origin, dtype=result.dtype) if not isinstance(origin, np.ndarray) else origin
        self._single(data, "fetch_and_op", "origin")
        self.get_accumulate(data, result, target_rank, target_disp, op)

    def compare_and_swap(
        self, origin: Any, compare: Any, result: np.ndarray, target_rank: int, target_disp: int = 0
    ) -> None:
        """Start replacing one target element by `origin` if it equals `compare`; fetch the old value."""
        rank = self._rank(target_rank, "compare_and_swap")
        self._single(result, "compare_and_swap", "result")
        self._check_result(result, rank, "compare_and_swap", raw_ok=True)
        if result.dtype not in COMPARE_TYPES:
            raise TypeError(f"rma: win.compare_and_swap: takes integers and bool, not {result.dtype}")
        data = self._origin(origin, rank, "compare_and_swap", raw_ok=False, dtype=result.dtype)
        comparand = self._origin(compare, rank, "compare_and_swap", raw_ok=False, dtype=result.dtype)
        self._single(data, "compare_and_swap", "origin")
        self._single(comparand, "compare_and_swap", "compare")
        out = self._landing(result)
        region = self._region("compare_and_swap", rank, target_disp, None, out)
        self._hold(rank, data, comparand)
        self._core.compare_and_swap(
            rank, element_type(out.dtype), data, comparand, out, region
        )
        self._keep(rank, result, out)

    # ---- synchronization ----

    def fence(self, mode: int = 0) -> _Epoch:
        """Complete the ending epoch everywhere and open the next; collective.

        As a context manager (`with win.fence(): ...`) the exit fences with Mode.NOSUCCEED.
        """
        self._check_open("fence")
        mode = _mode(mode, "fence")
        self._synchronized(lambda: self._core.fence(mode))
        return self._epochs["fence"]

    def _end_fence_epoch(self) -> None:
        self.fence(Mode.NOSUCCEED)

    def post(self, group: Any, mode: int = 0) -> _Epoch:
        """Open an exposure epoch for the origins in `group`; returns at once.

        As a context manager, the exit calls wait().
        """
        self._check_open("post")
        self._core.post(_group(group, "post"), _mode(mode, "post"))
        return self._epochs["post"]

    def start(self, group: Any, mode: int = 0) -> _Epoch:
        """Open an access epoch to the targets in `group`; returns at once.

        Calls to a target wait for its post, if it has not arrived yet. As a context manager,
        the exit calls complete().
        """
        self._check_open("start")
        self._core.start(_group(group, "start"), _mode(mode, "start"))
        return self._epochs["start"]

    def complete(self) -> None:
        """End the access epoch: its calls have completed at the origin and at the targets."""
        self._check_open("complete")
        self._synchronized(self._core.complete)

    def wait(self) -> None:
        """End the exposure epoch once every origin of the post group has called complete()."""
        self._check_open("wait")
        self._core.wait()

    def test(self) -> bool:
        """End the exposure epoch and return True if wait() would not block; else return False."""
        self._check_open("test")
        return self._core.test()

    def lock(self, rank: int, lock_type: int = LOCK_EXCLUSIVE, mode: int = 0) -> _Epoch:
        """Lock `rank`'s window (exclusive or shared) and open a passive-target epoch to it.

        Returns once the lock is granted; locks are granted in request order. As a context
        manager, the exit calls unlock(rank), also when the block raises.
        """
        rank = self._rank(rank, "lock", allow_null=False)
        if self._info["no_locks"]:
            raise EpochError(f"rma: win.lock: this window was created with info={{'no_locks': True}}")
        self._core.lock(rank, _lock_type(lock_type), _mode(mode, "lock"))
        epoch = self._epochs.get(rank)
        if epoch is None:
            epoch = self._epochs[rank] = _Epoch(self, Window.unlock, rank)
        return epoch

    def unlock(self, rank: int) -> None:
        """Complete this epoch's calls to `rank` (there too) and release its lock."""
        rank = self._rank(rank, "unlock", allow_null=False)
        self._synchronized(lambda: self._core.unlock(rank), rank)

    def lock_all(self, mode: int = 0) -> _Epoch:
        """Take a shared lock on every rank; as a context manager, the exit calls unlock_all()."""
        self._check_open("lock_all")
        if self._info["no_locks"]:
            raise EpochError(f"rma: win.lock_all: this window was created with info={{'no_locks': True}}")
        self._core.lock_all(_mode(mode, "lock_all"))
        return self._epochs["lock_all"]

    def unlock_all(self) -> None:
        """Complete every call of the lock_all epoch and release the locks."""
        self._check_open("unlock_all")
        self._synchronized(self._core.unlock_all)

    def flush(self, rank: int) -> None:
        """Complete every call to `rank` so far, at the origin and at `rank` (passive epochs)."""
        rank = self._rank(rank, "flush")
        self._synchronized(lambda: self._core.flush(rank), rank)

    def flush_all(self) -> None:
        """Complete every call so far to every rank (passive epochs)."""
        self._check_open("flush_all")
        self._synchronized(self._core.flush_all)

    def flush_local(self, rank: int) -> None:
        """Complete the calls to `rank` locally: origin buffers may be reused (here: a flush)."""
        self.flush(rank)

    def flush_local_all(self) -> None:
        """Complete every call locally (here: a flush_all)."""
        self.flush_all()

    def sync(self) -> None:
        """Synchronize the public and private copies of the window (a no-op: the model is unified)."""
        self._check_open("sync")

    def rput(self, origin: Any, target_rank: int, target_disp: int = 0, *, target: Any = None) -> Request:
        """put inside a passive-target epoch; return an rma.Request that completes it."""
        rank = self._passive_rank(target_rank, "rput")
        self.put(origin, rank, target_disp, target=target)
        return Request(self, rank, None)

    def rget(self, result: np.ndarray, target_rank: int, target_disp: int = 0, *, target: Any = None) -> Request:
        """get inside a passive-target epoch; the Request's wait() returns `result`, filled."""
        rank = self._passive_rank(target_rank, "rget")
        self.get(result, rank, target_disp, target=target)
        return Request(self, rank, result)

    def raccumulate(
        self, origin: Any, target_rank: int, target_disp: int = 0, op: Op = Op.SUM, *, target: Any = None
    ) -> Request:
        """accumulate inside a passive-target epoch; return an rma.Request."""
        rank = self._passive_rank(target_rank, "raccumulate")
        self.accumulate(origin, rank, target_disp, op, target=target)
        return Request(self, rank, None)

    def rget_accumulate(
        self,
        origin: Any,
        result: np.ndarray,
        target_rank: int,
        target_disp: int = 0,
        op: Op = Op.SUM,
        *,
        target: Any = None,
    ) -> Request:
        """get_accumulate inside a passive-target epoch; wait() returns `result`, filled."""
        rank = self._passive_rank(target_rank, "rget_accumulate")
        self.get_accumulate(origin, result, rank, target_disp, op, target=target)
        return Request(self, rank, result)

    def wait_until(self, index: Any, cmp: str, value: Any, *, timeout: float | None = None) -> Any:
        """Block until `win.local[index] <cmp> value` holds; return the value seen.

        cmp is one of "==", "!=", "<", "<=", ">", ">=". Progress goes on while waiting (other
        ranks' puts and accumulates land); raises TimeoutError after `timeout` seconds.
        """
        self._check_open("wait_until")
        try:
            compare = _COMPARISONS[cmp]
        except KeyError:
            raise ValueError(f"rma: win.wait_until: cmp must be one of {sorted(_COMPARISONS)}, not {cmp!r}") from None
        deadline = None if timeout is None else time.monotonic() + timeout
        pause = 1e-6
        while True:
            seen = self._local[index]
            if compare(seen, value):
                return seen.copy() if isinstance(seen, np.ndarray) else seen
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(
                    f"rma: win.wait_until({index!r}, {cmp!r}, {value!r}): still {seen!r} after {timeout} s"
                )
            time.sleep(pause)  # the progress thread delivers while we sleep
            pause = min(pause * 2, 1e-3)

    def free(self) -> None:
        """Free the window; collective. Any later call on it raises rma.RMAError."""
        self._check_open("free")
        self._core.free()
        self._freed = True
        self._attached.clear()
        self._pending.clear()
        self._after_sync.clear()

    def __enter__(self) -> Window:
        return self

    def __exit__(self, *exc_info: object) -> bool:
        if not self._freed:
            self.free()
        return False

    def __repr__(self) -> str:
        state = "freed" if self._freed else f"rank {self._comm.rank} of {self._comm.size}"
        return f"<rma.Window {self._flavor} {self.dtype} shape {self.shape}, {state}>"

    def __reduce__(self):
        raise TypeError("rma.Window cannot be pickled: it belongs to one process")

    # ---- helpers ----

    def _synchronized(self, sync: Callable[[], None], rank: int | None = None) -> None:
        """Run a synchronization that completes the calls (to `rank`, or to every rank), then
        finish their results and release their buffers."""
        sync()
        for target in [rank] if rank is not None else list(self._pending):
            for finish in self._after_sync.pop(target, ()):
                finish()
            self._pending.pop(target, None)

    def _check_open(self, call: str) -> None:
        if self._freed:
            raise RMAError(f"rma: win.{call}: the window was freed")

    def _rank(self, rank: object, call: str, allow_null: bool = True) -> int:
        self._check_open(call)
        try:
            rank = operator.index(rank)  # type: ignore[arg-type]
        except TypeError:
            raise TypeError(f"rma: win.{call}: a rank must be an integer, not {type(rank).__name__}") from None
        if rank == PROC_NULL and allow_null:
            return rank
        if not 0 <= rank < self._size:
            raise ValueError(
                f"rma: win.{call}: rank {rank} is not a rank of the window (size {self._size})"
            )
        return rank

    def _passive_rank(self, rank: Any, call: str) -> int:
        rank = self._rank(rank, call)
        if not self._core.in_passive_epoch(rank):
            raise EpochError(
                f"rma: win.{call} to rank {rank}: request-based calls need a passive-target epoch "
                f"(win.lock({rank}) or win.lock_all())"
            )
        return rank

    def _by_displacement(self, target: Any, call: str) -> bool:
        """Return True when the call addresses the target by displacement (not target=)."""
        if target is not None and self._flavor == "dynamic":
            raise TypeError(f"rma: win.{call}: a dynamic window takes byte displacements, not target=")
        return target is None

    def _target_dtype(self, rank: int) -> np.dtype:
        return self.dtype if rank == PROC_NULL else self._layout[rank][1]

    def _origin(self, origin: Any, rank: int, call: str, *, raw_ok: bool, dtype: np.dtype | None = None) -> np.ndarray:
        """Return the origin as a C-contiguous array of the right dtype (a copy if needed)."""
        expected = self._target_dtype(rank) if dtype is None else np.dtype(dtype)
        if isinstance(origin, np.generic):
            origin = np.asarray(origin)  # a NumPy scalar has a dtype of its own, like an array
        if isinstance(origin, np.ndarray):
            raw = raw_ok and self._target_dtype(rank) == np.uint8
            if origin.dtype != expected and not raw:
                raise TypeError(
                    f"rma: win.{call} to rank {rank}: origin dtype {origin.dtype} does not match "
                    f"the target window's {expected}"
                )
            return np.ascontiguousarray(origin)
        try:
            return np.ascontiguousarray(np.asarray(origin, dtype=expected))
        except (TypeError, ValueError) as error:
            raise TypeError(f"rma: win.{call}: cannot convert the origin to {expected}: {error}") from None

    def _check_result(self, result: Any, rank: int, call: str, *, raw_ok: bool) -> None:
        if not isinstance(result, np.ndarray):
            raise TypeError(f"rma: win.{call}: result must be a NumPy array, not {type(result).__name__}")
        if not result.flags.writeable:
            raise ValueError(f"rma: win.{call}: the result array is not writable")
        expected = self._target_dtype(rank)
        if result.dtype != expected and not (raw_ok and expected == np.uint8):
            raise TypeError(
                f"rma: win.{call} to rank {rank}: result dtype {result.dtype} does not match "
                f"the target window's {expected}"
            )

    @staticmethod
    def _landing(result: np.ndarray) -> np.ndarray:
        """Return where the core writes a result: `result` itself, or a contiguous stand-in."""
        return result if result.flags.c_contiguous else np.empty(result.shape, result.dtype)

    def _hold(self, rank: int, *arrays: np.ndarray) -> None:
        """Keep the arrays a call reads until it completes (a call to PROC_NULL reads nothing)."""
        if rank != PROC_NULL:
            self._pending[rank].extend(arrays)

    def _keep(self, rank: int, result: np.ndarray, out: np.ndarray) -> None:
        """Keep a result (and its stand-in) until the call completes; only once the core took it,
        so that a call refused before anything moved copies nothing into `result` later.
        A call to PROC_NULL moves nothing: nothing to keep, and `result` stays as it was."""
        if rank == PROC_NULL:
            return
        self._pending[rank].append(result)
        if out is not result:
            self._pending[rank].append(out)
            self._after_sync[rank].append(lambda: np.copyto(result, out))

    @staticmethod
    def _single(array: np.ndarray, call: str, name: str) -> None:
        if np.size(array) != 1:
            raise ValueError(f"rma: win.{call}: {name} must hold exactly one element, not {np.size(array)}")

    def _region(self, call: str, rank: int, disp: Any, target: Any, data: np.ndarray):
        """Return the target region as the core's (offset, element size, [(count, stride)...])."""
        try:
            disp = operator.index(disp)
        except TypeError:
            raise TypeError(f"rma: win.{call}: target_disp must be an integer, not {type(disp).__name__}") from None
        if rank == PROC_NULL:
            return (0, max(data.itemsize, 1), [(0, max(data.itemsize, 1))])
        shape, dtype, unit = self._layout[rank]
        if target is None:
            if disp < 0:
                raise TargetRangeError(
                    f"rma: win.{call} to rank {rank}: negative displacement {disp}"
                )
            if disp * unit >= 1 << 64:
                raise TargetRangeError(
                    f"rma: win.{call} to rank {rank}: displacement {disp} lies beyond any window"
                )
            itemsize = max(data.itemsize, 1)
            return (disp * unit, itemsize, [(data.size, itemsize)])
        if disp != 0:
            raise ValueError(f"rma: win.{call}: give either target_disp or target=, not both")
        if data.dtype != dtype:
            raise TypeError(
                f"rma: win.{call} to rank {rank}: with target=, the dtype must be the window's "
                f"{dtype}, not {data.dtype}"
            )
        offset, dims = _select(shape, dtype, target, call, rank)
        count = int(np.prod([c for c, _ in dims], dtype=np.int64))
        if count != data.size:
            raise ValueError(
                f"rma: win.{call} to rank {rank}: target={target!r} selects {count} elements, "
                f"the {'origin' if call == 'put' or call == 'accumulate' else 'result'} has {data.size}"
            )
        return (offset, dtype.itemsize, dims)


def _select(shape, dtype, index, call, rank):
    """Apply a basic NumPy index to a virtual array of `shape`: return (offset, [(count, stride)])."""
    parts = index if isinstance(index, tuple) else (index,)
    for part in parts:
        if part is Ellipsis or part is None or isinstance(part, slice):
            continue
        if isinstance(part, (bool, np.bool_)):
            raise TypeError(f"rma: win.{call}: target= takes integers, slices and Ellipsis, not a bool")
        try:
            operator.index(part)
        except TypeError:
            raise TypeError(
                f"rma: win.{call}: target= takes integers, slices and Ellipsis (a basic NumPy index), "
                f"not {type(part).__name__}"
            ) from None
    # A view over one element with the strides of the full array: indexing it computes the
    # selection without reading memory (the trailing Ellipsis keeps even full integer indexing
    # a view).
    itemsize = dtype.itemsize
    strides = []
    step = itemsize
    for extent in reversed(shape):
        strides.append(step)
        step *= max(extent, 1)
    base = np.zeros(1, dtype=dtype)
    virtual = np.lib.stride_tricks.as_strided(base, shape=shape, strides=tuple(reversed(strides)), writeable=False)
    try:
        view = virtual[parts + (Ellipsis,)] if Ellipsis not in parts else virtual[parts]
    except IndexError as error:
        raise TargetRangeError(f"rma: win.{call} to rank {rank}: target={index!r}: {error}") from None
    offset = view.__array_interface__["data"][0] - base.__array_interface__["data"][0]
    return offset, [(int(c), int(s)) for c, s in zip(view.shape, view.strides)]


def _address(array: np.ndarray) -> int:
    return array.__array_interface__["data"][0]


def _fixed_dtype(dtype: Any, call: str) -> np.dtype:
    dtype = np.dtype(dtype)
    if dtype.hasobject or dtype.itemsize == 0:
        raise TypeError(f"rma: Window.{call}: dtype {dtype} is not a fixed-size type")
    return dtype


def _shape(shape: Any) -> tuple[int, ...]:
    dims = (shape,) if np.ndim(shape) == 0 else tuple(shape)
    try:
        dims = tuple(operator.index(d) for d in dims)
    except TypeError:
        raise TypeError(f"rma: Window.allocate: shape must hold integers, got {shape!r}") from None
    if any(d < 0 for d in dims):
        raise ValueError(f"rma: Window.allocate: negative dimension in shape {shape!r}")
    return dims


def _positive(value: Any, call: str, name: str) -> int:
    number = operator.index(value)
    if number <= 0:
        raise ValueError(f"rma: Window.{call}: {name} must be positive, got {number}")
    return number


def _hints(info: dict | None, call: str) -> dict:
    if info is None:
        return dict(_KNOWN_HINTS)
    if not isinstance(info, dict):
        raise TypeError(f"rma: Window.{call}: info must be a dict, not {type(info).__name__}")
    hints = dict(_KNOWN_HINTS)
    for key, value in info.items():
        if key in hints:  # unknown hints are ignored, as MPI does
            hints[key] = bool(value)
    return hints


def _one_host(comm: Comm) -> bool:
    return len(set(comm.allgather(socket.gethostname()))) == 1


def _transport(comm: Comm) -> str:
    """Return the transport of a new allocate() window: the same answer on every rank."""
    setting = os.environ.get("RMA_TRANSPORT", "auto").strip() or "auto"
    if setting not in ("auto", "shared-memory", "libfabric"):
        raise ValueError(f"rma: RMA_TRANSPORT={setting!r}: use auto, shared-memory or libfabric")
    views = comm.allgather((socket.gethostname(), setting))
    if len({s for _, s in views}) != 1:
        raise ValueError("rma: the ranks disagree on RMA_TRANSPORT; give every rank the same")
    one_host = len({h for h, _ in views}) == 1
    if setting == "shared-memory" and not one_host:
        raise ValueError("rma: RMA_TRANSPORT=shared-memory needs every rank on one host")
    return "shared-memory" if one_host and setting != "libfabric" else "libfabric"


def _group(group: Any, call: str) -> list[int]:
    """Return the ranks of an rma.Group or of any iterable of ranks."""
    if isinstance(group, Group):
        return list(group.ranks)
    try:
        return list(Group(group).ranks)
    except TypeError as error:
        raise TypeError(f"rma: win.{call}: group must be an rma.Group or an iterable of ranks: {error}") from None
    except ValueError as error:
        raise ValueError(f"rma: win.{call}: {error}") from None


def _lock_type(lock_type: Any) -> int:
    if lock_type not in (LOCK_EXCLUSIVE, LOCK_SHARED):
        raise ValueError(f"rma: win.lock: lock_type must be rma.LOCK_EXCLUSIVE or rma.LOCK_SHARED, not {lock_type!r}")
    return int(lock_type)


_ALL_MODES = int(Mode.NOCHECK | Mode.NOSTORE | Mode.NOPUT | Mode.NOPRECEDE | Mode.NOSUCCEED)


def _mode(mode: Any, call: str) -> int:
    try:
        value = operator.index(mode)
    except TypeError:
        raise TypeError(f"rma: win.{call}: mode must be rma.Mode flags or 0, not {type(mode).__name__}") from None
    if value & ~_ALL_MODES:
        raise ValueError(f"rma: win.{call}: mode {value} is not a combination of rma.Mode flags")
    return value
