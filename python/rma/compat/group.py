"""MPI.Group of the mpi4py facade: an ordered set of processes, held as world ranks so that
groups of different communicators compare and translate."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from .._job import join as _join
from .constants import IDENT, PROC_NULL, SIMILAR, UNDEFINED, UNEQUAL
from .errors import ERR_ARG, ERR_GROUP, ERR_RANK
from .errors import Exception as MPIException
from .not_covered import refuse

__all__ = ["Group", "GROUP_EMPTY", "GROUP_NULL"]


class Group:
    """An ordered set of processes (MPI_Group)."""

    __slots__ = ("_world", "_null", "_predefined")

    def __init__(self, group: Group | None = None) -> None:
        if group is not None and not isinstance(group, Group):
            raise TypeError(f"rma.compat: MPI.Group: expected a group, not {type(group).__name__}")
        self._world: tuple[int, ...] = group._world if group is not None else ()
        self._null = group is None or group._null
        self._predefined = False

    @classmethod
    def _of(cls, world_ranks: Iterable[int]) -> Group:
        group = cls.__new__(cls)
        group._world = tuple(world_ranks)
        group._null = False
        group._predefined = False
        return group

    # ---- size and membership ----

    def Get_size(self) -> int:  # noqa: N802 - mpi4py's names
        self._check("Get_size")
        return len(self._world)

    def Get_rank(self) -> int:  # noqa: N802
        self._check("Get_rank")
        me = _my_world_rank()
        return self._world.index(me) if me in self._world else UNDEFINED

    size = property(Get_size)
    rank = property(Get_rank)

    def Translate_ranks(self, ranks: Sequence[int] | None = None, group: Group | None = None) -> list[int]:  # noqa: N802
        self._check("Translate_ranks")
        ranks = range(len(self._world)) if ranks is None else ranks
        result = []
        for rank in ranks:
            if rank == PROC_NULL:
                result.append(PROC_NULL)
                continue
            world = self._member("Translate_ranks", rank)
            if group is None:
                result.append(world)
            else:
                result.append(group._world.index(world) if world in group._world else UNDEFINED)
        return result

    def Compare(self, group: Group) -> int:  # noqa: N802
        """IDENT (the same processes in the same order), SIMILAR (in another order) or UNEQUAL."""
        self._check("Compare")
        _group(group, "Compare")._check("Compare")
        if self._world == group._world:
            return IDENT
        if sorted(self._world) == sorted(group._world):
            return SIMILAR
        return UNEQUAL

    def Incl(self, ranks: Iterable[int]) -> Group:  # noqa: N802
        self._check("Incl")
        world, size = self._world, len(self._world)
        return Group._of([world[rank] if 0 <= rank < size else self._member("Incl", rank) for rank in ranks])

    def Excl(self, ranks: Iterable[int]) -> Group:  # noqa: N802
        self._check("Excl")
        dropped = {self._member("Excl", rank) for rank in ranks}
        return Group._of(w for w in self._world if w not in dropped)

    def Range_incl(self, ranks: Iterable[tuple[int, int, int]]) -> Group:  # noqa: N802
        """The group of the ranks of each (first, last, stride) range, in that order."""
        self._check("Range_incl")
        return self.Incl(self._ranges("Range_incl", ranks))

    def Range_excl(self, ranks: Iterable[tuple[int, int, int]]) -> Group:  # noqa: N802
        """This group without the ranks of the (first, last, stride) ranges."""
        self._check("Range_excl")
        return self.Excl(self._ranges("Range_excl", ranks))

    @classmethod
    def Union(cls, group1: Group, group2: Group) -> Group:  # noqa: N802
        """group1's processes, then those of group2 not in group1."""
        first, second = _checked_pair("Union", group1, group2)
        return Group._of([*first, *(w for w in second if w not in first)])

    @classmethod
    def Intersection(cls, group1: Group, group2: Group) -> Group:  # noqa: N802
        """group1's processes that are in group2, in group1's order."""
        first, second = _checked_pair("Intersection", group1, group2)
        return Group._of(w for w in first if w in second)

    Intersect = Intersection  # (mpi4py's other name for it)

    @classmethod
    def Difference(cls, group1: Group, group2: Group) -> Group:  # noqa: N802
        """group1's processes that are not in group2, in group1's order."""
        first, second = _checked_pair("Difference", group1, group2)
        return Group._of(w for w in first if w not in second)

    def Dup(self) -> Group:  # noqa: N802
        self._check("Dup")
        return Group._of(self._world)

    def Free(self) -> None:  # noqa: N802
        if self._predefined:
            raise MPIException(ERR_GROUP, "rma.compat: Group.Free: a predefined group cannot be freed")
        self._null = True
        self._world = ()

    # ---- what the facade's other parts use ----

    def _ranks_in(self, members: Sequence[int]) -> list[int]:
        """This group's processes as ranks of a communicator whose world ranks are `members`."""
        position = {world: rank for rank, world in enumerate(members)}
        try:
            return [position[w] for w in self._world]
        except KeyError as missing:
            raise MPIException(ERR_RANK, f"rma.compat: world rank {missing} is not in the window's group") from None

    def _ranges(self, call: str, ranges: Iterable[tuple[int, int, int]]) -> list[int]:
        """The ranks (first, last, stride) ranges name: first, first + stride... up to last."""
        ranks = []
        for first, last, stride in ranges:
            if stride == 0 or (last - first) * stride < 0:
                raise MPIException(
                    ERR_ARG, f"rma.compat: Group.{call}: the range ({first}, {last}, {stride}) names no rank"
                )
            ranks.extend(range(first, last + (1 if stride > 0 else -1), stride))
        return ranks

    def _member(self, call: str, rank: int) -> int:
        if not 0 <= rank < len(self._world):
            raise MPIException(
                ERR_RANK, f"rma.compat: Group.{call}: rank {rank} is not in a group of size {len(self._world)}"
            )
        return self._world[rank]

    def _check(self, call: str) -> None:
        if self._null:
            raise MPIException(ERR_GROUP, f"rma.compat: Group.{call}: the group is MPI.GROUP_NULL")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Group):
            return NotImplemented
        return (self._null and other._null) or (not self._null and not other._null and self._world == other._world)

    def __hash__(self) -> int:
        return hash(self._world)

    def __reduce__(self) -> str | tuple[Any, ...]:
        # As mpi4py's: GROUP_NULL and GROUP_EMPTY pickle by name (and come back as themselves),
        # their copies as copies; a group of processes belongs to the job that has them.
        if self is GROUP_NULL or self is GROUP_EMPTY:
            return "GROUP_NULL" if self is GROUP_NULL else "GROUP_EMPTY"
        if self._null or not self._world:
            return (type(self), (GROUP_NULL if self._null else GROUP_EMPTY,))
        raise ValueError("rma.compat: cannot serialize a Group of processes: it belongs to one job")

    def __bool__(self) -> bool:
        return not self._null

    def __repr__(self) -> str:
        return "<MPI.Group GROUP_NULL>" if self._null else f"<MPI.Group of world ranks {list(self._world)}>"


def _group(group: object, call: str) -> Group:
    if not isinstance(group, Group):
        raise TypeError(f"rma.compat: Group.{call}: expected a group, not {type(group).__name__}")
    return group


def _checked_pair(call: str, group1: Group, group2: Group) -> tuple[tuple[int, ...], tuple[int, ...]]:
    _group(group1, call)._check(call)
    _group(group2, call)._check(call)
    return group1._world, group2._world


def _my_world_rank() -> int:
    return _join.init().rank  # (rma.init() is idempotent: the world communicator)


GROUP_NULL = Group()
GROUP_NULL._predefined = True
GROUP_EMPTY = Group._of(())
GROUP_EMPTY._predefined = True


# mpi4py's group calls that the facade does not cover: sessions' and handles' (a group is a
# Python object here, not an MPI handle).
refuse(Group, "Create_from_session_pset f2py py2f fromhandle fromint toint handle free")
