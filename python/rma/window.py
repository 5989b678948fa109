"""rma.Window: memory that the ranks of a communicator expose to each other.

The communication and synchronization calls are methods of the compiled base class
`rma._core.Window` (src/bindings/window_object.cpp): each call enters there once, is checked by
the core's rules and runs in the core, which also keeps the arrays a call uses alive until the
synchronization that completes it. This module adds what needs NumPy: creating windows,
`win.local` and the other views, turning a `target=` index into a region (`_region`) and an
origin that is not an array into one (`_origin_of`), which the compiled calls ask for.
"""

from __future__ import annotations

import functools
import math
import operator
import pickle
from typing import Any

import numpy as np

from . import _window_kinds
from ._job import join as _join
from ._native import _core
from .comm import Comm
from .errors import RMAError, TargetRangeError
from .group import Group
from .ops import PROC_NULL

__all__ = ["Window", "Request"]

# What the request-based calls (rput, rget, raccumulate, rget_accumulate) return.
Request = _core.Request

# no_locks: no lock will be taken (MPI's hint); no_check: RMA_CHECK leaves the window alone (a
# window whose accesses race on purpose, as a demonstration of lost updates does).
_KNOWN_HINTS = {"no_locks": False, "no_check": False}
# The call that makes a window of each flavor, named in its errors.
_CREATION_CALLS = {
    "allocate": "Window.allocate",
    "shared": "Window.allocate_shared",
    "create": "Window.create",
    "dynamic": "Window.create_dynamic",
}

# Which kinds of Python numbers an origin list may hold, by the kind of the window's dtype
# (NumPy's dtype.kind): the core's rule for single numbers too (elements/number_kinds.hpp).
_ACCEPTED_KINDS: dict[str, str] = _core.ACCEPTED_NUMBER_KINDS


class Window(_core.Window):
    """Expose memory of every rank of a communicator to one-sided communication.

    Make one with `Window.allocate` (memory owned by the library), `Window.create` (over an
    array of yours) or `Window.create_dynamic`; all are collective. Open epochs with `fence`,
    `post`/`start` or `lock`, then `put`, `get`, `accumulate`... to any rank; the data has moved
    at the epoch's next synchronization.

    Example::

        win = rma.Window.allocate(comm, 10, np.float64)
        with win.fence():
            win.put(np.arange(3.0), (comm.rank + 1) % comm.size, target_disp=2)
        print(win.local)   # elements 2..4 hold what the left neighbour put
        win.free()
    """

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

        Collective over `comm`; shapes may differ between ranks (0 elements is fine). Example:
        ``win = rma.Window.allocate(comm, (4, 4), np.float64)``; ``win.local`` is that array.
        """
        dtype = _fixed_dtype(dtype, "allocate")
        shape = _shape(shape)
        nbytes = math.prod(shape) * dtype.itemsize
        # The memory goes in a shared segment that the ranks of this host map (RMA_TRANSPORT=libfabric
        # keeps it private, reached through libfabric); ranks on other hosts reach it through libfabric.
        if _near(comm):
            # (The core makes it while creating the window, from the pool of freed windows'
            # segments: no system call for a window made after another of its size.)
            return cls._build(comm, "allocate", shape, dtype, disp_unit, info, pooled=True)
        memory = _core.WindowMemory(nbytes)
        local = np.frombuffer(memory, dtype=np.uint8).view(dtype).reshape(shape)
        return cls._build(comm, "allocate", shape, dtype, disp_unit, info, local, memory.address, memory)

    @classmethod
    def allocate_shared(
        cls, comm: Comm, shape: int | tuple[int, ...], dtype: Any = np.uint8, *, info: dict | None = None
    ) -> Window:
        """Return a window like allocate(), whose every rank's memory win.shared(rank) shows directly.

        Collective; every rank of `comm` must run on one host. Example:
        ``win = rma.Window.allocate_shared(comm, 8, np.int64); left = win.shared((comm.rank - 1) % comm.size)``.
        """
        if not _one_host(comm):
            raise ValueError("rma: Window.allocate_shared: every rank of comm must run on one host")
        dtype = _fixed_dtype(dtype, "allocate_shared")
        shape = _shape(shape)
        return cls._build(comm, "shared", shape, dtype, None, info, pooled=False)

    def shared(self, rank: int) -> np.ndarray:
        """Return a direct load/store view of `rank`'s memory (allocate_shared windows)."""
        rank = self._rank(rank, "shared")
        if self._flavor != "shared":
            raise RMAError(
                f"rma: win.shared: only a window from Window.allocate_shared has it, not this {self._flavor} one"
            )
        if rank == self._comm.rank:
            return self._local
        shape, dtype, _ = self._layout[rank]
        return np.frombuffer(self._core.segment(rank), dtype=np.uint8).view(dtype).reshape(shape)

    @classmethod
    def create(cls, comm: Comm, array: np.ndarray, *, disp_unit: int | None = None, info: dict | None = None) -> Window:
        """Return a window over `array` (writable, C-contiguous), which the window keeps alive.

        Collective over `comm`. Example: ``data = np.zeros(100); win = rma.Window.create(comm, data)``;
        other ranks' puts then land in ``data``.
        """
        if not isinstance(array, np.ndarray):
            raise TypeError(f"rma: Window.create: expected a NumPy array, got {type(array).__name__}")
        if not array.flags.writeable:
            raise ValueError("rma: Window.create: the array is not writable")
        if not array.flags.c_contiguous:
            raise ValueError("rma: Window.create: the array is not C-contiguous (use np.ascontiguousarray)")
        _fixed_dtype(array.dtype, "create")
        address = array.__array_interface__["data"][0]
        # Peers on this host copy straight into and out of the array (process_vm_writev/readv), and
        # when every rank is on this host they synchronize in shared memory.
        near = isinstance(comm, Comm) and _near(comm)
        return cls._build(comm, "create", array.shape, array.dtype, disp_unit, info, array, address, array, near=near)

    @classmethod
    def create_dynamic(cls, comm: Comm, *, info: dict | None = None) -> Window:
        """Return a window that exposes, on each rank, the memory it attaches later.

        Collective over `comm`. Displacements are bytes (disp_unit 1), given by attach();
        `target=` does not apply.
        """
        return cls._build(comm, "dynamic", (0,), np.dtype(np.uint8), 1, info, np.zeros(0, np.uint8), 0)

    @classmethod
    def _build(
        cls, comm, flavor, shape, dtype, disp_unit, info, local=None, address=0, owner=None, near=False, pooled=False
    ) -> Window:
        """Make the window of `flavor` over `local` (at `address`, kept alive by `owner`); without
        `local`, over shared memory that the core makes while creating the window (from the pool
        of freed windows' segments when `pooled`), so that a rank that cannot have it makes every
        rank raise rather than leaving them waiting."""
        call = _CREATION_CALLS[flavor]
        _require_comm(comm, call)
        unit = dtype.itemsize if disp_unit is None else _positive(disp_unit, flavor, "disp_unit")
        hints = _hints(info, flavor)
        if cls is Window:  # RMA_CHECK, RMA_MODEL=separate: the kinds that add to the calls
            cls = _window_kinds.window_class(Window, flavor, checked=not hints["no_check"])
        # Every rank learns every rank's shape, dtype and displacement unit: a note that the
        # core's creation gathers with its own exchange.
        note = _note(shape, dtype, unit)
        label = _label(flavor, dtype, shape)
        if flavor == "dynamic":
            core = _core.WindowCore.create_dynamic(comm._core, "dynamic", call, note)
        elif local is None:
            nbytes = math.prod(shape) * dtype.itemsize
            core = _core.WindowCore.create_shared(comm._core, nbytes, pooled, label, call, note)
            owner = core.segment(comm.rank)
            local = np.frombuffer(owner, dtype=np.uint8).view(dtype).reshape(shape)
        else:
            core = _core.WindowCore.create(comm._core, address, local.nbytes, label, near, call, note)
        layout = [_layout(note) for note in core.notes]
        # What the compiled calls need of each target: its dtype, displacement unit, and whether
        # it is raw bytes (a uint8 window takes any plain dtype by displacement).
        targets = [(dt, u, dt == np.uint8) for _, dt, u in layout]
        window = _core.Window.__new__(cls, core, targets, owner, hints["no_locks"], flavor == "dynamic")
        window._core = core
        window._comm = comm
        window._local = local
        window._flavor = flavor
        window._disp_unit = unit
        window._info = hints
        window._layout = layout
        if hasattr(window, "_start_separate"):
            window._start_separate()
        if hasattr(window, "_start_checking"):
            window._start_checking()
        return window

    @staticmethod
    def _allocate_plain(comm: Comm, shape: int | tuple[int, ...], dtype: Any) -> Window:
        """Return a window like allocate(), a plain rma.Window whatever RMA_CHECK and RMA_MODEL
        say: a window of rma's own that no kind may add to (the checker's clock board)."""
        return _PlainWindow.allocate(comm, shape, dtype)

    # ---- attributes ----

    @property
    def local(self) -> np.ndarray:
        """Return this rank's window memory as a NumPy array (zero-copy)."""
        self._check_open("local")
        return self._local

    @local.setter
    def local(self, value: np.ndarray) -> None:
        self._keep_local(value, self._local)

    @staticmethod
    def _keep_local(value: object, local: np.ndarray) -> None:
        """Accept an assignment to win.local only when it is the window's own memory (`win.local
        += 1` works in place, then assigns its result back); refuse a replacement."""
        if not (
            isinstance(value, np.ndarray)
            and value.shape == local.shape
            and value.__array_interface__["data"][0] == local.__array_interface__["data"][0]
        ):
            raise AttributeError("rma: win.local cannot be replaced; assign into it instead (win.local[...] = x)")

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
        return self._layout[self._rank(rank, "target_shape")][0]

    @property
    def model(self) -> str:
        """Return the memory model: "unified" (puts land in the memory that win.local shows).

        "separate" under RMA_MODEL=separate (rma.separate), which emulates MPI's separate model.
        """
        return "unified"

    @property
    def info(self) -> dict:
        """Return the hints in force, and the transport the window's calls use."""
        return {**self._info, "transport": self.transport}

    @property
    def transport(self) -> str:
        """Return how calls reach the other ranks: "shared-memory", "libfabric" or "mixed".

        "shared-memory" (every rank on this host): synchronization through shared memory;
        puts and gets are memcpy (allocate, allocate_shared) or a direct copy between the
        processes (create); accumulates are CPU operations under the target's lock (allocate)
        or messages the target applies (create, dynamic windows). "libfabric": every rank
        through libfabric (RMA_TRANSPORT=libfabric, or RMA_PROVIDER set: then dynamic windows
        too; a job with one rank per host). "mixed": the
        ranks of this host as with "shared-memory", the others through libfabric, and
        synchronization by messages; transport_to(rank) tells which rank goes which way.
        """
        ways = {self._core.reach_name(r) for r in range(self._comm.size)}
        return ways.pop() if len(ways) == 1 else "mixed"

    def transport_to(self, rank: int) -> str:
        """Return how this rank reaches `rank`: "shared-memory" or "libfabric".

        "shared-memory" for this rank's host (itself included) unless RMA_TRANSPORT=libfabric,
        or the window is dynamic in a job that uses libfabric (it spans hosts, or RMA_PROVIDER is
        set); "libfabric" for ranks on other hosts. Example::

            win.transport_to(0)   # "shared-memory" when rank 0 shares this rank's host
        """
        return self._core.reach_name(self._rank(rank, "transport_to"))

    @property
    def comm(self) -> Comm:
        """Return the communicator the window was made over."""
        return self._comm

    @property
    def group(self) -> Group:
        """Return the group of the window's ranks."""
        return self._comm.group

    def __enter__(self) -> Window:
        return self

    def __exit__(self, *exc_info: object) -> bool:
        if not self._core.freed:
            self.free()
        return False

    def __repr__(self) -> str:
        state = "freed" if self._core.freed else f"rank {self._comm.rank} of {self._comm.size}"
        return f"<rma.Window {self._flavor} {self.dtype} shape {self.shape}, {state}>"

    def __reduce__(self):
        raise TypeError("rma.Window cannot be pickled: it belongs to one process")

    # ---- what the compiled calls ask of NumPy ----

    def _region(self, call: str, rank: int, index: Any, elements: int) -> tuple[int, int, list[tuple[int, int]]]:
        """Return the region `target=index` selects on `rank` for a call moving `elements`
        elements, as (offset, itemsize, [(count, stride)...])."""
        shape, dtype, _ = self._layout[self._comm.rank if rank == PROC_NULL else rank]
        offset, dims = _select(shape, dtype, index, call, rank)
        count = int(np.prod([c for c, _ in dims], dtype=np.int64))
        if count != elements:
            raise ValueError(
                f"rma: win.{call} to rank {rank}: target={index!r} selects {count} elements, "
                f"the {'result' if 'get' in call else 'origin'} has {elements}"
            )
        return offset, dtype.itemsize, dims

    @staticmethod
    def _origin_of(value: Any, dtype: np.dtype, call: str) -> np.ndarray:
        """Return an origin that is not an array as one: a NumPy scalar keeps its dtype; a list
        (or tuple) of numbers becomes `dtype` under the rules single numbers follow."""
        if isinstance(value, np.generic):
            return np.asarray(value)
        if isinstance(value, (list, tuple)):
            if dtype.kind not in _ACCEPTED_KINDS:  # structured and other plain dtypes: NumPy's rules
                return np.asarray(value, dtype=dtype)
            if len(value) == 0:
                return np.empty(0, dtype)
            array = np.asarray(value)
            if array.dtype.kind == "O" and all(type(item) is int for item in array.flat):
                raise ValueError(f"rma: win.{call}: the origin's values do not fit {dtype}")  # beyond 64 bits
            if array.dtype.kind not in _ACCEPTED_KINDS[dtype.kind]:
                raise TypeError(f"rma: win.{call}: a list of {array.dtype} values is not a list of {dtype} values")
            converted = array.astype(dtype)
            if not np.array_equal(converted, array):
                raise ValueError(f"rma: win.{call}: the origin's values do not fit {dtype}")
            return converted
        raise TypeError(
            f"rma: win.{call}: the origin must be an array, a number or a list of numbers, not {type(value).__name__}"
        )

    # ---- helpers ----

    def _check_open(self, call: str) -> None:
        if self._core.freed:
            raise RMAError(f"rma: win.{call}: the window was freed")

    def _rank(self, rank: object, call: str) -> int:
        self._check_open(call)
        if isinstance(rank, bool):
            raise TypeError(f"rma: win.{call}: a rank must be an integer, not bool")
        try:
            rank = operator.index(rank)  # type: ignore[arg-type]
        except TypeError:
            raise TypeError(f"rma: win.{call}: a rank must be an integer, not {type(rank).__name__}") from None
        self._core.check_rank(call, rank, False)
        return rank


class _PlainWindow(Window):
    """rma.Window as it is: `_build` asks the job's settings for a kind only for Window itself."""


_CANONICAL = {dtype: dtype for dtype in _core.ELEMENT_DTYPES}


# A window's creation tells every rank each rank's (shape, dtype, disp_unit) in a note. Programs
# make windows of a few layouts over and over: each layout is pickled, unpickled and named once
# (a dtype's pickling and str() cost microseconds each, several times per window).


@functools.lru_cache(maxsize=256)
def _note(shape: tuple[int, ...], dtype: np.dtype, unit: int) -> bytes:
    return pickle.dumps((shape, dtype, unit))


@functools.lru_cache(maxsize=256)
def _layout(note: bytes) -> tuple[tuple[int, ...], np.dtype, int]:
    shape, dtype, unit = pickle.loads(note)
    return tuple(shape), _canonical(np.dtype(dtype)), unit


@functools.lru_cache(maxsize=256)
def _label(flavor: str, dtype: np.dtype, shape: tuple[int, ...]) -> str:
    return f"{flavor}, {dtype}, shape {shape}"


def _canonical(dtype: np.dtype) -> np.dtype:
    """Return the element type's own dtype object if `dtype` equals one (e.g. once unpickled)."""
    return _CANONICAL.get(dtype, dtype)


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


def _fixed_dtype(dtype: Any, call: str) -> np.dtype:
    dtype = np.dtype(dtype)
    if dtype.hasobject or dtype.itemsize == 0:
        raise TypeError(f"rma: Window.{call}: dtype {dtype} is not a fixed-size type")
    return dtype


def _shape(shape: Any) -> tuple[int, ...]:
    if type(shape) is int and shape >= 0:
        return (shape,)
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


def _require_comm(comm: Any, call: str) -> None:
    if not isinstance(comm, Comm):
        raise TypeError(f"rma: {call}: comm must be an rma.Comm, not {type(comm).__name__}")


def _one_host(comm: Comm) -> bool:
    return comm._core.on_one_host()


def _near(comm: Comm) -> bool:
    """Whether a new window reaches the ranks of this host without libfabric: the same answer on
    every rank, from what the join learnt once (RMA_TRANSPORT, the job's topology)."""
    setting = _join.transport_setting()
    if setting == "shared-memory" and not comm._core.on_one_host():
        raise ValueError("rma: RMA_TRANSPORT=shared-memory needs every rank on one host")
    return setting != "libfabric"
