"""MPI.Comm and MPI.Intracomm of the mpi4py facade, over rma.Comm: COMM_WORLD, COMM_SELF, what a
communicator is (rank, size, group, name, comparison, attributes) and making and freeing
communicators (Dup, Split, Split_type, Create, Free). Its messages are point_to_point.py's
calls, its collectives collectives.py's."""

from __future__ import annotations

import os
import threading
from typing import Any

import rma as _rma

from .._job import join as _join
from . import attributes as _attributes
from . import collective_worker
from .attributes import Attributes
from .collectives import Collectives
from .constants import (
    ANY_SOURCE,
    COMM_TYPE_SHARED,
    CONGRUENT,
    IDENT,
    KEYVAL_INVALID,
    PROC_NULL,
    SIMILAR,
    UNDEFINED,
    UNEQUAL,
)
from .errhandler import ERRORS_RETURN, Errhandler, checked
from .errors import ERR_ARG, ERR_COMM, ERR_GROUP, ERR_KEYVAL, last_used_code, translated
from .errors import Exception as MPIException
from .group import Group
from .info import Info
from .not_covered import NotCoveredError, refuse
from .point_to_point import PointToPoint
from .requests import Request

__all__ = ["Comm", "Intracomm", "COMM_NULL", "COMM_WORLD", "COMM_SELF"]

# The largest tag a message may carry: the core's Communicator::kMaxTag
# (src/core/runtime/communicator.hpp); MPI.TAG_UB's value.
_TAG_UB_VALUE = (1 << 30) - 1


class Comm(PointToPoint, Collectives):
    """A communicator (MPI_Comm): the ranks a call involves and the context its messages use.

    `MPI.Comm(comm)` is another handle of the same communicator (equal to it, sharing its
    attributes); `MPI.Comm()` is a handle equal to MPI.COMM_NULL."""

    def __init__(self, comm: Comm | None = None) -> None:
        if comm is not None and not isinstance(comm, Comm):
            raise TypeError(f"rma.compat: MPI.Comm: expected a communicator, not {type(comm).__name__}")
        self._comm: _rma.Comm | None = comm._comm if comm is not None else None
        self._kind = comm._kind if comm is not None else "null"
        self._name = comm._name if comm is not None else "MPI_COMM_NULL"
        self._errhandler = comm._errhandler if comm is not None else Errhandler(ERRORS_RETURN)
        self._attrs = comm._attrs if comm is not None else Attributes()
        self._locks: dict[str, threading.Lock] = comm._locks if comm is not None else {}  # (collectives.py)

    @classmethod
    def _of(cls, comm: _rma.Comm | None, name: str = "", kind: str = "made") -> Comm:
        made = cls.__new__(cls)
        made._comm, made._kind, made._name, made._errhandler = comm, kind, name, Errhandler(ERRORS_RETURN)
        made._attrs = Attributes()
        made._locks = {}
        return made

    @property
    def _base(self) -> _rma.Comm:
        """The rma.Comm underneath; COMM_WORLD and COMM_SELF join the job at first use."""
        if self._comm is None:
            if self._kind in ("world", "self"):
                # Made once, by the module's handle: MPI.Comm(MPI.COMM_SELF) made before the first
                # use is the same communicator, not a second one of its own.
                predefined = COMM_WORLD if self._kind == "world" else COMM_SELF
                if predefined._comm is None:
                    world = _join.init()
                    predefined._comm = world if self._kind == "world" else _rma.Comm(world._core.alone())
                self._comm = predefined._comm
            elif self._kind == "pending":
                raise MPIException(
                    ERR_COMM, "rma.compat: the communicator of Comm.Idup is used before its request completed"
                )
            else:
                raise MPIException(ERR_COMM, "rma.compat: the communicator is MPI.COMM_NULL")
        return self._comm

    def _live(self, call: str) -> _rma.Comm:
        """The rma.Comm underneath, or MPI.ERR_COMM naming `call` for MPI.COMM_NULL."""
        if self._kind == "null":
            raise MPIException(ERR_COMM, f"rma.compat: {call}: the communicator is MPI.COMM_NULL")
        return self._base

    # ---- size, rank, group ----

    def Get_rank(self) -> int:  # noqa: N802 - mpi4py's names
        return self._live("Comm.Get_rank").rank

    def Get_size(self) -> int:  # noqa: N802
        return self._live("Comm.Get_size").size

    rank = property(Get_rank)
    size = property(Get_size)

    def Get_group(self) -> Group:  # noqa: N802
        self._live("Comm.Get_group")
        return Group._of(self._members())

    group = property(Get_group)

    def _members(self) -> tuple[int, ...]:
        """World ranks of this communicator's ranks, in rank order (asked of the core once)."""
        base = self._base
        known = self.__dict__.get("_known_members")
        if known is None or known[0] is not base:
            known = self._known_members = (base, tuple(base._core.members))
        return known[1]

    def Get_name(self) -> str:  # noqa: N802
        return self._name

    def Set_name(self, name: str) -> None:  # noqa: N802
        self._name = str(name)

    name = property(Get_name, Set_name)

    def Is_inter(self) -> bool:  # noqa: N802
        self._live("Comm.Is_inter")
        return False

    def Is_intra(self) -> bool:  # noqa: N802
        self._live("Comm.Is_intra")
        return True

    is_inter = property(Is_inter)
    is_intra = property(Is_intra)

    def Get_topology(self) -> int:  # noqa: N802
        """MPI.UNDEFINED: no communicator of the facade has a topology (topologies stay out)."""
        self._live("Comm.Get_topology")
        return UNDEFINED

    topology = property(Get_topology)

    def Compare(self, comm: Comm) -> int:  # noqa: N802
        """IDENT (the same communicator), CONGRUENT (the same ranks in the same order, another
        context: a Dup), SIMILAR (the same ranks in another order) or UNEQUAL."""
        if not isinstance(comm, Comm):
            raise TypeError(f"rma.compat: Comm.Compare: expected a communicator, not {type(comm).__name__}")
        mine, theirs = self._live("Comm.Compare"), comm._live("Comm.Compare")
        if mine is theirs:
            return IDENT
        members1, members2 = self._members(), comm._members()
        if members1 == members2:
            return CONGRUENT
        return SIMILAR if sorted(members1) == sorted(members2) else UNEQUAL

    # ---- attributes ----

    def Get_attr(self, keyval: int) -> Any:  # noqa: N802
        """The value of attribute `keyval`, or None if the communicator has none: MPI's
        predefined keyvals (TAG_UB...) on any communicator, or the user's (Create_keyval)."""
        base = self._live("Comm.Get_attr")
        if keyval in _attributes.PREDEFINED:
            return _predefined_attribute(base, keyval)
        return self._attrs.get(keyval, "Comm.Get_attr")[1]

    def Set_attr(self, keyval: int, attrval: Any) -> None:  # noqa: N802
        self._live("Comm.Set_attr")
        _user_keyval(keyval, "Comm.Set_attr")
        self._attrs.set(self, keyval, attrval, "Comm.Set_attr")

    def Delete_attr(self, keyval: int) -> None:  # noqa: N802
        self._live("Comm.Delete_attr")
        _user_keyval(keyval, "Comm.Delete_attr")
        self._attrs.delete(self, keyval, "Comm.Delete_attr")

    @classmethod
    def Create_keyval(cls, copy_fn: Any = None, delete_fn: Any = None, nopython: bool = False) -> int:  # noqa: N802
        """A new keyval: `copy_fn(comm, keyval, value)` gives a Dup's value (None: not copied,
        True: the same value, NotImplemented returned: not copied); `delete_fn(comm, keyval,
        value)` runs when the value goes (Delete_attr, Set_attr over it, Free)."""
        return _attributes.create(copy_fn, delete_fn)

    @classmethod
    def Free_keyval(cls, keyval: int) -> int:  # noqa: N802
        _attributes.free(keyval, "Comm.Free_keyval")
        return KEYVAL_INVALID

    # ---- error handler and hints ----

    def Get_errhandler(self) -> Errhandler:  # noqa: N802
        self._live("Comm.Get_errhandler")
        return Errhandler(self._errhandler)

    def Set_errhandler(self, errhandler: Errhandler) -> None:  # noqa: N802
        self._live("Comm.Set_errhandler")
        self._errhandler = checked(errhandler, "Comm.Set_errhandler")

    def Get_info(self) -> Info:  # noqa: N802
        self._live("Comm.Get_info")
        return Info.Create()

    def Set_info(self, info: Info) -> None:  # noqa: N802
        self._live("Comm.Set_info")  # (no communicator hint changes what rma does)

    info = property(Get_info, Set_info)

    # ---- making and freeing communicators ----

    @translated
    def Dup(self, info: Info | None = None) -> Intracomm:  # noqa: N802
        """A communicator of the same ranks whose messages never mix with this one's; the
        user's attributes go through their copy callbacks."""
        base = self._parent("Comm.Dup")
        made = Intracomm._of(base.dup())
        made._attrs = self._attrs.copied(self)
        return made

    @translated
    def Idup(self, info: Info | None = None) -> tuple[Intracomm, Request]:  # noqa: N802
        """Dup, started: the communicator is usable once the request completes. Its split runs
        in the communicator's collective worker (collective_worker.py), in order with the other
        started collectives, so the program may exchange messages before it waits."""
        base = self._live("Comm.Idup")
        made = Intracomm._of(None, "", "pending")
        made._attrs = self._attrs.copied(self)

        def run() -> None:
            made._comm, made._kind = base.dup(), "made"

        return made, Request._of(collective_worker.start(base, run, "Comm.Idup"), message=False)

    def Idup_with_info(self, info: Info) -> tuple[Intracomm, Request]:  # noqa: N802
        return self.Idup(info)

    def _parent(self, call: str) -> _rma.Comm:
        """The rma.Comm a blocking collective call makes a communicator of, once the collectives
        started on it before are done (so that it comes after them on every rank)."""
        base = self._live(call)
        collective_worker.drain(base)
        return base

    Clone = Dup

    def Dup_with_info(self, info: Info) -> Intracomm:  # noqa: N802
        return self.Dup(info)

    @translated
    def Split(self, color: int = 0, key: int = 0) -> Intracomm:  # noqa: N802
        made = self._parent("Comm.Split").split(None if color == UNDEFINED else color, key)
        return Intracomm._of(made) if made is not None else Intracomm(COMM_NULL)

    @translated
    def Split_type(self, split_type: int, key: int = 0, info: Info | None = None) -> Intracomm:  # noqa: N802
        base = self._parent("Comm.Split_type")
        if split_type == UNDEFINED:
            base.split(None, key)  # (takes part, gets nothing: MPI's rule)
            return Intracomm(COMM_NULL)
        if split_type != COMM_TYPE_SHARED:
            raise MPIException(
                ERR_ARG, f"rma.compat: Comm.Split_type: only MPI.COMM_TYPE_SHARED is covered, not {split_type}"
            )
        return Intracomm._of(base.split_type("host", key))

    @translated
    def Create(self, group: Group) -> Intracomm:  # noqa: N802
        """The communicator of `group`'s ranks, in the group's order, on its members;
        MPI.COMM_NULL on the others. Collective over this communicator, every rank passing the
        same group (MPI's rule): it is a split whose color is membership and whose key is the
        position in the group."""
        base = self._parent("Comm.Create")
        position = self._position_in(group, "Comm.Create")
        made = base.split(None if position is None else 0, position or 0)
        return Intracomm._of(made) if made is not None else Intracomm(COMM_NULL)

    @translated
    def Create_group(self, group: Group, tag: int = 0) -> Intracomm:  # noqa: N802
        """Create, called by `group`'s members only (MPI_Comm_create_group). Covered when the
        group holds every rank of this communicator, where it is Create; a part of the ranks
        agreeing on a context without the others needs what the core does not offer."""
        self._live("Comm.Create_group")
        position = self._position_in(group, "Comm.Create_group")
        if sorted(group._world) != sorted(self._members()):
            raise NotCoveredError(
                f"rma.compat: Comm.Create_group of a group smaller than the communicator is not covered "
                f"(rank {self._base.rank}): use Comm.Create, which every rank of the communicator calls"
            )
        made = self._parent("Comm.Create_group").split(0, position)
        return Intracomm._of(made)

    def _position_in(self, group: Group, call: str) -> int | None:
        """This rank's position in `group`, None if not a member; the group must be made of
        this communicator's ranks."""
        if not isinstance(group, Group) or not group:
            raise MPIException(ERR_GROUP, f"rma.compat: {call}: expected a group, not {group!r}")
        members = set(self._members())
        outside = [w for w in group._world if w not in members]
        if outside:
            raise MPIException(
                ERR_GROUP, f"rma.compat: {call}: world ranks {outside} of the group are not in the communicator"
            )
        me = self._members()[self._base.rank]
        return group._world.index(me) if me in group._world else None

    def Free(self) -> None:  # noqa: N802
        """Free the communicator: its attributes' delete callbacks run; the handle becomes
        MPI.COMM_NULL."""
        if self._kind in ("world", "self", "null", "pending"):
            raise MPIException(
                ERR_COMM, f"rma.compat: Comm.Free: {self._name or 'a predefined communicator'} cannot be freed"
            )
        self._attrs.clear(self)
        self._comm, self._kind, self._name = None, "null", "MPI_COMM_NULL"

    def Abort(self, errorcode: int = 0) -> None:  # noqa: N802
        """End this process at once with `errorcode`; the launcher stops the others (rmarun does)."""
        os._exit(errorcode if 0 < errorcode < 256 else 1)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Comm):
            return NotImplemented
        if self._kind == "null" or other._kind == "null":
            return self._kind == other._kind
        return self._kind == other._kind and (self._kind in ("world", "self") or self._comm is other._comm)

    def __hash__(self) -> int:
        return hash(self._kind) if self._kind in ("world", "self", "null") else id(self._comm)

    def __bool__(self) -> bool:
        return self._kind != "null"

    def __reduce__(self) -> str | tuple[Any, ...]:
        # As mpi4py's: the predefined handles pickle by name (COMM_WORLD comes back as itself),
        # their copies as copies; a communicator made by the program belongs to its process.
        predefined = {"null": "COMM_NULL", "world": "COMM_WORLD", "self": "COMM_SELF"}.get(self._kind)
        if predefined is None:
            raise ValueError(f"rma.compat: cannot serialize {type(self).__name__}: it belongs to one process")
        if self is globals()[predefined]:
            return predefined
        return (type(self), (globals()[predefined],))

    def __repr__(self) -> str:
        return f"<MPI.Comm {self._name or 'communicator'}>"


class Intracomm(Comm):
    """A communicator within one group of ranks (MPI's intracommunicator)."""


def _user_keyval(keyval: int, call: str) -> None:
    if keyval in _attributes.PREDEFINED:
        raise MPIException(ERR_KEYVAL, f"rma.compat: {call}: keyval {keyval} is MPI's own, set by the library")


def _predefined_attribute(base: _rma.Comm, keyval: int) -> Any:
    """The values MPI defines for its keyvals, as rma's job has them."""
    if keyval == _attributes.TAG_UB:
        return _TAG_UB_VALUE
    if keyval == _attributes.HOST:
        return PROC_NULL  # (MPI's value when no rank is "the host")
    if keyval == _attributes.IO:
        return ANY_SOURCE  # every rank can do I/O (rmarun forwards every rank's output)
    if keyval == _attributes.WTIME_IS_GLOBAL:
        # MPI.Wtime reads the host's monotonic clock: the same clock for the ranks of one host.
        return bool(_join.init()._core.on_one_host())
    if keyval == _attributes.UNIVERSE_SIZE:
        return _join.init().size  # (no process can be spawned: the universe is the job)
    if keyval == _attributes.APPNUM:
        return 0  # one program (rmarun starts no MPMD job)
    return last_used_code()  # LASTUSEDCODE


# mpi4py's communicator calls that rma has no counterpart for (yet); point_to_point.py and
# collectives.py list those of their kind. The buffers attached to one communicator are
# MPI 4.1's, past the MPI 3.1 the facade follows (MPI.Attach_buffer is covered).
refuse(
    Comm,
    """
    Attach_buffer Detach_buffer Flush_buffer Iflush_buffer
    Create_from_group Create_cart Create_graph
    Create_dist_graph Create_dist_graph_adjacent Create_intercomm Split_type_guided
    Spawn Spawn_multiple Get_parent Disconnect Join Accept Connect
    Call_errhandler Create_errhandler Get_failed Ack_failed
    Agree Iagree Revoke Is_revoked Shrink Ishrink
    is_topo f2py py2f fromhandle fromint toint handle free
    """,
)
refuse(Intracomm, "Cart_map Graph_map")

COMM_NULL = Intracomm()
COMM_WORLD = Intracomm._of(None, "MPI_COMM_WORLD", "world")
COMM_SELF = Intracomm._of(None, "MPI_COMM_SELF", "self")
