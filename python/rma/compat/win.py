"""MPI.Win of the mpi4py facade, over rma.Window.

Every window underneath is a window of bytes whose displacement unit is 1: the facade keeps
each rank's MPI disp_unit itself and hands rma byte displacements, so that a target given as
`disp`, `(disp, count)` or `(disp, count, datatype)` (a derived datatype too) becomes one rma call
per contiguous run of the target's layout, all in the same epoch (win_targets.py).
"""

from __future__ import annotations

import os
import sys
from typing import Any

import numpy as np

import rma as _rma
from rma._native import _core

from . import attributes as _attributes
from . import collective_worker
from .attributes import Attributes
from .buffers import origin_elements, result_elements
from .comm import COMM_SELF, Comm
from .constants import (
    KEYVAL_INVALID,
    LOCK_EXCLUSIVE,
    LOCK_SHARED,
    PROC_NULL,
    WIN_BASE,
    WIN_CREATE_FLAVOR,
    WIN_DISP_UNIT,
    WIN_FLAVOR_ALLOCATE,
    WIN_FLAVOR_CREATE,
    WIN_FLAVOR_DYNAMIC,
    WIN_FLAVOR_SHARED,
    WIN_MODEL,
    WIN_SEPARATE,
    WIN_SIZE,
    WIN_UNIFIED,
)
from .errhandler import ERRORS_RETURN, Errhandler, checked
from .errors import ERR_ARG, ERR_KEYVAL, ERR_LOCKTYPE, ERR_WIN, SUCCESS, TRANSLATED, as_mpi, translated
from .errors import Exception as MPIException
from .group import Group
from .info import INFO_NULL, Info, hints_of
from .memory import BOTTOM, Get_address, buffer, bytes_of
from .not_covered import refuse
from .ops import SUM, Op
from .requests import Request
from .win_targets import one_each, origin_and_result, runs, together

__all__ = ["Win", "WIN_NULL"]


class _NullWindow:
    """What a null or freed MPI.Win calls into: every call raises, naming it (so the calls
    programs make in loops need no check of their own)."""

    def __getattr__(self, name: str) -> Any:
        def refuse(*args: Any, **kwargs: Any) -> None:
            call = name[:1].upper() + name[1:]  # (rma's win.flush_all is mpi4py's Win.Flush_all)
            raise MPIException(ERR_WIN, f"rma.compat: Win.{call}: the window is MPI.WIN_NULL (freed or never made)")

        return refuse


_NULL_WINDOW = _NullWindow()

_LOCK_TYPES = {LOCK_EXCLUSIVE: _rma.LOCK_EXCLUSIVE, LOCK_SHARED: _rma.LOCK_SHARED}
_core.FacadeWindow._set_lock_types(LOCK_EXCLUSIVE, _rma.LOCK_EXCLUSIVE, LOCK_SHARED, _rma.LOCK_SHARED)


class Win(_core.FacadeWindow):
    """A window of memory that the ranks of a communicator expose to each other (MPI_Win)."""

    def __init__(self, win: Win | None = None) -> None:
        if win is not None and not isinstance(win, Win):
            raise TypeError(f"rma.compat: MPI.Win() takes an MPI.Win, not {type(win).__name__}")
        self._adopt(win)

    def _adopt(self, win: Win | None) -> None:
        self._win: Any = win._win if win is not None else _NULL_WINDOW
        self._comm: Comm | None = win._comm if win is not None else None
        self._flavor = win._flavor if win is not None else 0
        self._memory = win._memory if win is not None else buffer()
        self._base = win._base if win is not None else 0
        self._units: list[int] = win._units if win is not None else []
        # Bytes per displacement unit of each rank (a dynamic window's displacements are
        # addresses): what the windows underneath count in is bytes. Kept by the compiled base.
        self._set_scale(_scale_of(self._flavor, self._units))
        self._position: dict[int, int] = win._position if win is not None else {}
        self._group_ranks: dict[tuple[int, ...], list[int]] = {}  # world ranks of a group -> its ranks here
        self._name = win._name if win is not None else "MPI_WIN_NULL"
        self._errhandler = Errhandler(ERRORS_RETURN)
        self._attrs = win._attrs if win is not None else Attributes()  # (the user's keyvals' values)

    # ---- creation (collective) ----

    @classmethod
    @translated
    def Create(cls, memory: Any, disp_unit: int = 1, info: Info = INFO_NULL, comm: Comm = COMM_SELF) -> Win:  # noqa: N802
        """A window over the caller's memory (any writable buffer; MPI.BOTTOM for none)."""
        local = bytes_of(memory, writable=memory is not BOTTOM, call="Win.Create")
        window = _rma.Window.create(_ready(comm), local, disp_unit=1, info=hints_of(info))
        return cls._made(window, comm, WIN_FLAVOR_CREATE, local, Get_address(memory), disp_unit)

    @classmethod
    @translated
    def Allocate(cls, size: int, disp_unit: int = 1, info: Info = INFO_NULL, comm: Comm = COMM_SELF) -> Win:  # noqa: N802
        """A window over `size` new bytes on each rank."""
        window = _rma.Window.allocate(
            _ready(comm), _size(size, "Win.Allocate"), np.uint8, disp_unit=1, info=hints_of(info)
        )
        return cls._made(window, comm, WIN_FLAVOR_ALLOCATE, window.local, window.local.view(buffer).address, disp_unit)

    @classmethod
    @translated
    def Allocate_shared(cls, size: int, disp_unit: int = 1, info: Info = INFO_NULL, comm: Comm = COMM_SELF) -> Win:  # noqa: N802
        """A window over `size` new bytes per rank, that every rank (all on one host) can load and store."""
        window = _rma.Window.allocate_shared(
            _ready(comm), _size(size, "Win.Allocate_shared"), np.uint8, info=hints_of(info)
        )
        return cls._made(window, comm, WIN_FLAVOR_SHARED, window.local, window.local.view(buffer).address, disp_unit)

    @classmethod
    @translated
    def Create_dynamic(cls, info: Info = INFO_NULL, comm: Comm = COMM_SELF) -> Win:  # noqa: N802
        """A window of no memory yet: each rank attaches memory, addressed by MPI.Get_address."""
        window = _rma.Window.create_dynamic(_ready(comm), info=hints_of(info))
        return cls._made(window, comm, WIN_FLAVOR_DYNAMIC, np.zeros(0, np.uint8), 0, 1)

    @classmethod
    def _made(cls, window: _rma.Window, comm: Comm, flavor: int, local: np.ndarray, base: int, disp_unit: int) -> Win:
        unit = _size(disp_unit, "Win creation (disp_unit)")
        if unit == 0:
            raise MPIException(ERR_ARG, "rma.compat: Win creation: disp_unit must be positive")
        win = cls.__new__(cls)
        win._adopt(None)
        win._win, win._comm, win._flavor, win._base = window, comm, flavor, base
        win._memory = local.view(buffer)
        # Every rank's unit, for displacements aimed at it (the windows underneath count bytes).
        win._units = [unit] if comm._base.size == 1 else comm._base.allgather(unit)
        win._set_scale(_scale_of(flavor, win._units))
        win._position = {world: rank for rank, world in enumerate(comm._members())}  # world rank -> rank
        win._name = ""
        return win

    @translated
    def Free(self) -> None:  # noqa: N802
        window = self._open("Free")
        self._attrs.clear(self, "Win.Free")  # (delete callbacks first, as MPI's Win_free runs them)
        window.free()
        self._adopt(None)

    @translated
    def Attach(self, memory: Any) -> None:  # noqa: N802
        self._open("Attach").attach(bytes_of(memory, writable=True, call="Win.Attach"))

    @translated
    def Detach(self, memory: Any) -> None:  # noqa: N802
        self._open("Detach").detach(bytes_of(memory, writable=True, call="Win.Detach"))

    # ---- communication ----

    # Put, Get, Accumulate, Get_accumulate, Fetch_and_op and Compare_and_swap are compiled
    # (src/bindings/facade_window.cpp): plain arrays and a displacement go straight to rma's own
    # calls; every other form comes here, to the method of the same name with a leading underscore.

    @translated
    def _Put(self, origin: Any, target_rank: int, target: Any = None) -> None:  # noqa: N802
        window = self._open("Put")
        data = origin_elements(origin, "Win.Put")
        for first, count, disp in runs(self, target_rank, target, data, "Put"):
            window.put(data[first : first + count], target_rank, disp)

    @translated
    def _Get(self, origin: Any, target_rank: int, target: Any = None) -> None:  # noqa: N802
        window = self._open("Get")
        data = result_elements(origin, "Win.Get")
        for first, count, disp in runs(self, target_rank, target, data, "Get"):
            window.get(data[first : first + count], target_rank, disp)

    @translated
    def _Accumulate(self, origin: Any, target_rank: int, target: Any = None, op: Op = SUM) -> None:  # noqa: N802
        window = self._open("Accumulate")
        rma_op = op._window_op("Accumulate")
        data = origin_elements(origin, "Win.Accumulate")
        for first, count, disp in runs(self, target_rank, target, data, "Accumulate"):
            window.accumulate(data[first : first + count], target_rank, disp, rma_op)

    @translated
    def _Get_accumulate(  # noqa: N802
        self, origin: Any, result: Any, target_rank: int, target: Any = None, op: Op = SUM
    ) -> None:
        window = self._open("Get_accumulate")
        data, into = origin_and_result(origin, result, op, "Get_accumulate")
        rma_op = op._window_op("Get_accumulate")
        for first, count, disp in runs(self, target_rank, target, into, "Get_accumulate"):
            window.get_accumulate(data[first : first + count], into[first : first + count], target_rank, disp, rma_op)

    @translated
    def _Fetch_and_op(  # noqa: N802
        self, origin: Any, result: Any, target_rank: int, target_disp: int = 0, op: Op = SUM
    ) -> None:
        window = self._open("Fetch_and_op")
        rma_op = op._window_op("Fetch_and_op")
        data, into = origin_and_result(origin, result, op, "Fetch_and_op")
        one_each("Fetch_and_op", data, into)
        window.fetch_and_op(data, into, target_rank, self._byte_disp(target_rank, target_disp), rma_op)

    @translated
    def _Compare_and_swap(  # noqa: N802
        self, origin: Any, compare: Any, result: Any, target_rank: int, target_disp: int = 0
    ) -> None:
        window = self._open("Compare_and_swap")
        data = origin_elements(origin, "Win.Compare_and_swap")
        expected = origin_elements(compare, "Win.Compare_and_swap")
        into = result_elements(result, "Win.Compare_and_swap")
        one_each("Compare_and_swap", data, expected, into)
        window.compare_and_swap(data, expected, into, target_rank, self._byte_disp(target_rank, target_disp))

    def _raise_as_mpi(self, error: BaseException) -> None:
        """What the compiled calls do with an error of rma's call: raise it as mpi4py would."""
        if isinstance(error, TRANSLATED):
            raise as_mpi(error) from None
        raise error

    @translated
    def Rput(self, origin: Any, target_rank: int, target: Any = None) -> Request:  # noqa: N802
        window = self._open("Rput")
        data = origin_elements(origin, "Win.Rput")
        return together(
            window.rput(data[f : f + n], target_rank, d) for f, n, d in runs(self, target_rank, target, data, "Rput")
        )

    @translated
    def Rget(self, origin: Any, target_rank: int, target: Any = None) -> Request:  # noqa: N802
        window = self._open("Rget")
        data = result_elements(origin, "Win.Rget")
        return together(
            window.rget(data[f : f + n], target_rank, d) for f, n, d in runs(self, target_rank, target, data, "Rget")
        )

    @translated
    def Raccumulate(self, origin: Any, target_rank: int, target: Any = None, op: Op = SUM) -> Request:  # noqa: N802
        window = self._open("Raccumulate")
        data = origin_elements(origin, "Win.Raccumulate")
        rma_op = op._window_op("Raccumulate")
        made = runs(self, target_rank, target, data, "Raccumulate")
        return together(window.raccumulate(data[f : f + n], target_rank, d, rma_op) for f, n, d in made)

    @translated
    def Rget_accumulate(  # noqa: N802
        self, origin: Any, result: Any, target_rank: int, target: Any = None, op: Op = SUM
    ) -> Request:
        window = self._open("Rget_accumulate")
        data, into = origin_and_result(origin, result, op, "Rget_accumulate")
        rma_op = op._window_op("Rget_accumulate")
        made = runs(self, target_rank, target, into, "Rget_accumulate")
        return together(
            window.rget_accumulate(data[f : f + n], into[f : f + n], target_rank, d, rma_op) for f, n, d in made
        )

    # ---- synchronization ----
    # Lock, Unlock, Lock_all, Unlock_all, Fence, Complete, Wait, Test, the flushes and Sync are
    # compiled too; these take what they leave (keywords, a freed window, a bad lock type).

    @translated
    def _Fence(self, assertion: int = 0) -> None:  # noqa: N802
        self._win.fence(assertion)

    def Start(self, group: Group, assertion: int = 0) -> None:  # noqa: N802
        try:
            self._win.start(self._ranks_of(group), assertion)
        except TRANSLATED as exc:
            raise as_mpi(exc) from None

    @translated
    def _Complete(self) -> None:  # noqa: N802
        self._win.complete()

    def Post(self, group: Group, assertion: int = 0) -> None:  # noqa: N802
        try:
            self._win.post(self._ranks_of(group), assertion)
        except TRANSLATED as exc:
            raise as_mpi(exc) from None

    @translated
    def _Wait(self) -> bool:  # noqa: N802
        self._win.wait()
        return True

    @translated
    def _Test(self) -> bool:  # noqa: N802
        return self._win.test()

    def _Lock(self, rank: int, lock_type: int = LOCK_EXCLUSIVE, assertion: int = 0) -> None:  # noqa: N802
        try:
            self._win.lock(rank, _LOCK_TYPES[lock_type], assertion)
        except KeyError:
            raise MPIException(
                ERR_LOCKTYPE,
                f"rma.compat: Win.Lock: lock_type must be MPI.LOCK_EXCLUSIVE or MPI.LOCK_SHARED, not {lock_type!r}",
            ) from None
        except TRANSLATED as exc:
            raise as_mpi(exc) from None

    @translated
    def _Unlock(self, rank: int) -> None:  # noqa: N802
        self._win.unlock(rank)

    @translated
    def _Lock_all(self, assertion: int = 0) -> None:  # noqa: N802
        self._win.lock_all(assertion)

    @translated
    def _Unlock_all(self) -> None:  # noqa: N802
        self._win.unlock_all()

    @translated
    def _Flush(self, rank: int) -> None:  # noqa: N802
        self._win.flush(rank)

    @translated
    def _Flush_all(self) -> None:  # noqa: N802
        self._win.flush_all()

    @translated
    def _Flush_local(self, rank: int) -> None:  # noqa: N802
        self._win.flush_local(rank)

    @translated
    def _Flush_local_all(self) -> None:  # noqa: N802
        self._win.flush_local_all()

    @translated
    def _Sync(self) -> None:  # noqa: N802
        self._win.sync()

    # ---- memory, attributes, names ----

    def tomemory(self) -> buffer:
        """This rank's window memory as an MPI.buffer (no bytes for a dynamic window)."""
        self._open("tomemory")
        return self._memory

    @translated
    def Shared_query(self, rank: int) -> tuple[buffer, int]:  # noqa: N802
        """(the memory, disp_unit) of `rank` in a window from Allocate_shared; PROC_NULL: the
        first rank whose memory is not empty."""
        window = self._open("Shared_query")
        if self._flavor != WIN_FLAVOR_SHARED:
            raise MPIException(ERR_WIN, "rma.compat: Win.Shared_query: only a window from Win.Allocate_shared has it")
        if rank == PROC_NULL:
            sizes = [window.target_shape(r)[0] for r in range(window.comm.size)]
            rank = next((r for r, size in enumerate(sizes) if size), 0)
        return window.shared(rank).view(buffer), self._units[rank]

    def Get_attr(self, keyval: int) -> Any:  # noqa: N802
        """The value of attribute `keyval`: MPI's window keyvals (WIN_BASE...) or the user's
        (Create_keyval; None where this window has no value). An unknown keyval: ERR_KEYVAL."""
        self._open("Get_attr")
        if keyval == WIN_BASE:
            return self._base
        if keyval == WIN_SIZE:
            return int(self._memory.nbytes)
        if keyval == WIN_DISP_UNIT:
            return self._units[self._comm._base.rank]
        if keyval == WIN_CREATE_FLAVOR:
            return self._flavor
        if keyval == WIN_MODEL:
            return self.model
        return self._attrs.get(keyval, "Win.Get_attr")[1]

    def Set_attr(self, keyval: int, attrval: Any) -> None:  # noqa: N802
        self._open("Set_attr")
        self._attrs.set(self, _user_keyval(keyval, "Win.Set_attr"), attrval, "Win.Set_attr")

    def Delete_attr(self, keyval: int) -> None:  # noqa: N802
        self._open("Delete_attr")
        self._attrs.delete(self, _user_keyval(keyval, "Win.Delete_attr"), "Win.Delete_attr")

    @classmethod
    def Create_keyval(cls, copy_fn: Any = None, delete_fn: Any = None, nopython: bool = False) -> int:  # noqa: N802
        """A new keyval for windows: `delete_fn(win, keyval, value)` runs when its value goes
        (Delete_attr, Set_attr over it, Free). Windows are not duplicated: copy_fn is kept unused."""
        return _attributes.create(copy_fn, delete_fn)

    @classmethod
    def Free_keyval(cls, keyval: int) -> int:  # noqa: N802
        _attributes.free(keyval, "Win.Free_keyval")
        return KEYVAL_INVALID

    @property
    def attrs(self) -> tuple[int, int, int]:
        """(base address, size in bytes, disp_unit) of this rank's window memory."""
        return self.Get_attr(WIN_BASE), self.Get_attr(WIN_SIZE), self.Get_attr(WIN_DISP_UNIT)

    @property
    def flavor(self) -> int:
        return self.Get_attr(WIN_CREATE_FLAVOR)

    @property
    def model(self) -> int:
        return WIN_SEPARATE if self._open("model").model == "separate" else WIN_UNIFIED

    def Get_group(self) -> Group:  # noqa: N802
        self._open("Get_group")
        return self._comm.Get_group()

    group = property(Get_group)

    @property
    def group_size(self) -> int:
        return self._open("group_size").comm.size

    @property
    def group_rank(self) -> int:
        return self._open("group_rank").comm.rank

    def Get_info(self) -> Info:  # noqa: N802
        return Info.Create({key: value for key, value in self._open("Get_info").info.items()})

    def Set_info(self, info: Info) -> None:  # noqa: N802
        self._open("Set_info")  # (rma fixes a window's hints at creation; later ones change nothing)

    info = property(Get_info, Set_info)

    def Get_name(self) -> str:  # noqa: N802
        return self._name

    def Set_name(self, name: str) -> None:  # noqa: N802
        self._open("Set_name")
        self._name = str(name)

    name = property(Get_name, Set_name)

    def Get_errhandler(self) -> Errhandler:  # noqa: N802
        self._open("Get_errhandler")
        return Errhandler(self._errhandler)

    def Set_errhandler(self, errhandler: Errhandler) -> None:  # noqa: N802
        self._open("Set_errhandler")
        self._errhandler = checked(errhandler, "Win.Set_errhandler")

    def Call_errhandler(self, errorcode: int) -> None:  # noqa: N802
        """Invoke this window's error handler with `errorcode`, as a failing call would:
        ERRORS_RETURN returns; ERRORS_ARE_FATAL and ERRORS_ABORT end the process for an error
        (rmarun then stops the job), as MPI's do."""
        self._open("Call_errhandler")
        if errorcode != SUCCESS and self._errhandler != ERRORS_RETURN:
            print(f"rma.compat: Win.Call_errhandler: error {errorcode} under {self._errhandler!r}", file=sys.stderr)
            os._exit(errorcode if 0 < errorcode < 256 else 1)

    # ---- helpers ----

    def _open(self, call: str) -> _rma.Window:
        if self._win is _NULL_WINDOW:
            raise MPIException(ERR_WIN, f"rma.compat: Win.{call}: the window is MPI.WIN_NULL (freed or never made)")
        return self._win

    def _ranks_of(self, group: Group) -> list[int]:
        """A group's processes as ranks of the window's communicator (for Start and Post)."""
        if type(group) is not Group:
            return list(group)  # (a plain list of ranks, as rma takes)
        ranks = self._group_ranks.get(group._world)  # (programs make the same groups epoch after epoch)
        if ranks is None:
            try:
                ranks = [self._position[world] for world in group._world]
            except KeyError:
                return group._ranks_in(self._comm._members())  # (which names the stranger)
            if len(self._group_ranks) < 64:
                self._group_ranks[group._world] = ranks
        return ranks

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Win):
            return NotImplemented
        return self._win is other._win

    def __hash__(self) -> int:
        return id(self._win)

    def __bool__(self) -> bool:
        return self._win is not _NULL_WINDOW

    def __reduce__(self):
        raise ValueError("rma.compat: a window cannot be pickled: it belongs to one process")

    def __repr__(self) -> str:
        return "<MPI.Win WIN_NULL>" if self._win is _NULL_WINDOW else f"<MPI.Win over {self._win!r}>"


def _ready(comm: Comm) -> _rma.Comm:
    """The communicator a window is made over, once the collectives the program started on it
    (Ibarrier...) have run: creation is collective, so it must come after them on every rank."""
    base = comm._base
    collective_worker.drain(base)
    return base


def _user_keyval(keyval: int, call: str) -> int:
    if keyval in (WIN_BASE, WIN_SIZE, WIN_DISP_UNIT, WIN_CREATE_FLAVOR, WIN_MODEL):
        raise MPIException(ERR_KEYVAL, f"rma.compat: {call}: keyval {keyval} is MPI's own, set by the library")
    return keyval


def _scale_of(flavor: int, units: list[int]) -> list[int]:
    """Bytes per displacement unit by rank, for the compiled base (none: bytes already)."""
    return [] if flavor == WIN_FLAVOR_DYNAMIC else units


def _size(value: Any, call: str) -> int:
    try:
        size = int(value.__index__())
    except (AttributeError, TypeError):
        raise MPIException(ERR_ARG, f"rma.compat: {call}: expected an integer, not {type(value).__name__}") from None
    if size < 0:
        raise MPIException(ERR_ARG, f"rma.compat: {call}: {size} is negative")
    return size


# mpi4py's window calls that the facade does not cover.
refuse(Win, "Create_errhandler f2py py2f fromhandle fromint toint handle free")

WIN_NULL = Win()
