"""MPI.Group of the mpi4py facade: an ordered set of processes, held as world ranks so that
groups of different communicators compare and translate."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from .._job import join as _join
from .constants import IDENT, PROC_NULL, SIMILAR, UNDEFINED, UNEQUAL
from .errors import ERR_GROUP, ERR_RANK
from .errors import Exception as MPIException

__all__ = ["Group", "GROUP_EMPTY", "GROUP_NULL"]


class Group:
    """An ordered set of processes (MPI_Group)."""

    __slots__ = ("_world", "_null", "_predefined")

    def __init__(self, group: Group | None = None) -> None:
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

    @staticmethod
    def Compare(group1: Group, group2: Group) -> int:  # noqa: N802
        if group1._world == group2._world:
            return IDENT
        if sorted(group1._world) == sorted(group2._world):
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

    @staticmethod
    def Union(group1: Group, group2: Group) -> Group:  # noqa: N802
        return Group._of([*group1._world, *(w for w in group2._world if w not in group1._world)])

    @staticmethod
    def Intersection(group1: Group, group2: Group) -> Group:  # noqa: N802
        return Group._of(w for w in group1._world if w in group2._world)

    @staticmethod
    def Difference(group1: Group, group2: Group) -> Group:  # noqa: N802
        return Group._of(w for w in group1._world if w not in group2._world)

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

    def __bool__(self) -> bool:
        return not self._null

    def __repr__(self) -> str:
        return "<MPI.Group GROUP_NULL>" if self._null else f"<MPI.Group of world ranks {list(self._world)}>"


def _my_world_rank() -> int:
    return _join.init().rank  # (rma.init() is idempotent: the world communicator)


GROUP_NULL = Group()
GROUP_NULL._predefined = True
GROUP_EMPTY = Group._of(())
GROUP_EMPTY._predefined = True
