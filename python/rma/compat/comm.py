"""MPI.Comm and MPI.Intracomm of the mpi4py facade, over rma.Comm: COMM_WORLD, COMM_SELF, what a
communicator is (rank, size, group, name, comparison, attributes) and making and freeing
communicators (Dup, Split, Split_type, Free). Its messages are point_to_point.py's calls, its
collectives collectives.py's."""

from __future__ import annotations

import os
from typing import Any

import rma as _rma

from .._job import join as _join
from .collectives import Collectives
from .constants import COMM_TYPE_SHARED, CONGRUENT, IDENT, SIMILAR, UNDEFINED, UNEQUAL
from .errhandler import ERRORS_RETURN, Errhandler, checked
from .errors import ERR_ARG, ERR_COMM, translated
from .errors import Exception as MPIException
from .group import Group
from .info import Info
from .not_covered import refuse
from .point_to_point import PointToPoint

__all__ = ["Comm", "Intracomm", "COMM_NULL", "COMM_WORLD", "COMM_SELF"]


class Comm(PointToPoint, Collectives):
    """A communicator (MPI_Comm): the ranks a call involves and the context its messages use."""

    def __init__(self, comm: Comm | None = None) -> None:
        self._comm: _rma.Comm | None = comm._comm if comm is not None else None
        self._kind = comm._kind if comm is not None else "null"
        self._name = comm._name if comm is not None else "MPI_COMM_NULL"
        self._errhandler = Errhandler(ERRORS_RETURN)

    @classmethod
    def _of(cls, comm: _rma.Comm | None, name: str = "", kind: str = "made") -> Comm:
        made = cls.__new__(cls)
        made._comm, made._kind, made._name, made._errhandler = comm, kind, name, Errhandler(ERRORS_RETURN)
        return made

    @property
    def _base(self) -> _rma.Comm:
        """The rma.Comm underneath; COMM_WORLD and COMM_SELF join the job at first use."""
        if self._comm is None:
            if self._kind == "world":
                self._comm = _join.init()
            elif self._kind == "self":
                self._comm = _rma.Comm(_join.init()._core.alone())
            else:
                raise MPIException(ERR_COMM, "rma.compat: the communicator is MPI.COMM_NULL")
        return self._comm

    # ---- size, rank, group ----

    def Get_rank(self) -> int:  # noqa: N802 - mpi4py's names
        return self._base.rank

    def Get_size(self) -> int:  # noqa: N802
        return self._base.size

    rank = property(Get_rank)
    size = property(Get_size)

    def Get_group(self) -> Group:  # noqa: N802
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
        return False

    def Is_intra(self) -> bool:  # noqa: N802
        return True

    is_inter = property(Is_inter)
    is_intra = property(Is_intra)

    @staticmethod
    def Compare(comm1: Comm, comm2: Comm) -> int:  # noqa: N802
        if comm1._base is comm2._base:
            return IDENT
        members1, members2 = comm1._members(), comm2._members()
        if members1 == members2:
            return CONGRUENT
        return SIMILAR if sorted(members1) == sorted(members2) else UNEQUAL

    def Get_attr(self, keyval: int) -> Any:  # noqa: N802
        return None  # (no attribute of a communicator is kept: TAG_UB, APPNUM... are not set)

    def Get_errhandler(self) -> Errhandler:  # noqa: N802
        return Errhandler(self._errhandler)

    def Set_errhandler(self, errhandler: Errhandler) -> None:  # noqa: N802
        self._errhandler = checked(errhandler, "Comm.Set_errhandler")

    def Get_info(self) -> Info:  # noqa: N802
        return Info.Create()

    def Set_info(self, info: Info) -> None:  # noqa: N802
        pass  # (no communicator hint changes what rma does)

    # ---- making and freeing communicators ----

    @translated
    def Dup(self, info: Info | None = None) -> Intracomm:  # noqa: N802
        return Intracomm._of(self._base.dup())

    Clone = Dup

    @translated
    def Split(self, color: int = 0, key: int = 0) -> Intracomm:  # noqa: N802
        made = self._base.split(None if color == UNDEFINED else color, key)
        return Intracomm._of(made) if made is not None else Intracomm(COMM_NULL)

    @translated
    def Split_type(self, split_type: int, key: int = 0, info: Info | None = None) -> Intracomm:  # noqa: N802
        if split_type == UNDEFINED:
            self._base.split(None, key)  # (takes part, gets nothing: MPI's rule)
            return Intracomm(COMM_NULL)
        if split_type != COMM_TYPE_SHARED:
            raise MPIException(
                ERR_ARG, f"rma.compat: Comm.Split_type: only MPI.COMM_TYPE_SHARED is covered, not {split_type}"
            )
        return Intracomm._of(self._base.split_type("host", key))

    def Free(self) -> None:  # noqa: N802
        if self._kind in ("world", "self", "null"):
            raise MPIException(
                ERR_COMM, f"rma.compat: Comm.Free: {self._name or 'a predefined communicator'} cannot be freed"
            )
        self._comm, self._kind = None, "null"

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

    def __reduce__(self):
        raise ValueError("rma.compat: a communicator cannot be pickled: it belongs to one process")

    def __repr__(self) -> str:
        return f"<MPI.Comm {self._name or 'communicator'}>"


class Intracomm(Comm):
    """A communicator within one group of ranks (MPI's intracommunicator)."""


# mpi4py's communicator calls that rma has no counterpart for (yet); point_to_point.py and
# collectives.py list those of their kind.
refuse(
    Comm,
    """
    Idup Dup_with_info Create Create_group Create_from_group Create_cart Create_graph
    Create_dist_graph Create_dist_graph_adjacent Create_intercomm Split_type_guided
    Spawn Spawn_multiple Get_parent Disconnect Join Accept Connect Get_topology
    Set_attr Delete_attr Create_keyval Free_keyval Call_errhandler Create_errhandler Get_failed Ack_failed
    Agree Iagree Revoke Is_revoked Shrink Ishrink
    """,
)

COMM_NULL = Intracomm()
COMM_WORLD = Intracomm._of(None, "MPI_COMM_WORLD", "world")
COMM_SELF = Intracomm._of(None, "MPI_COMM_SELF", "self")
