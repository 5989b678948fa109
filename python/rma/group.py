"""rma.Group: an ordered set of ranks of a communicator."""

from __future__ import annotations

import operator
from collections.abc import Iterable, Iterator

__all__ = ["Group"]


class Group:
    """Hold an ordered set of distinct ranks (of the communicator it is used with).

    ``Group([2, 0, 3])`` is the group whose member 0 is rank 2, member 1 rank 0, member 2
    rank 3. ``incl`` and ``excl`` select by member position, as MPI_Group_incl/excl do.
    """

    __slots__ = ("_ranks",)

    def __init__(self, ranks: Iterable[int] = ()) -> None:
        members = []
        for rank in ranks:
            rank = _as_index(rank)
            if rank < 0:
                raise ValueError(f"rma.Group: rank {rank} is negative")
            members.append(int(rank))
        if len(set(members)) != len(members):
            raise ValueError(f"rma.Group: ranks must be distinct, got {members}")
        self._ranks = tuple(members)

    @property
    def ranks(self) -> tuple[int, ...]:
        """Return the ranks, in member order."""
        return self._ranks

    @property
    def size(self) -> int:
        """Return the number of members."""
        return len(self._ranks)

    def incl(self, members: Iterable[int]) -> Group:
        """Return the group of the members at the given positions, in that order."""
        return Group(self._ranks[self._position(m, "incl")] for m in members)

    def excl(self, members: Iterable[int]) -> Group:
        """Return this group without the members at the given positions."""
        drop = {self._position(m, "excl") for m in members}
        return Group(r for i, r in enumerate(self._ranks) if i not in drop)

    def rank_of(self, rank: int) -> int | None:
        """Return the member position of `rank`, or None if it is not a member."""
        try:
            return self._ranks.index(rank)
        except ValueError:
            return None

    def _position(self, member: int, call: str) -> int:
        member = _as_index(member)
        if not 0 <= member < len(self._ranks):
            raise ValueError(f"rma.Group.{call}: member {member} is not in a group of size {len(self._ranks)}")
        return member

    def __len__(self) -> int:
        return len(self._ranks)

    def __iter__(self) -> Iterator[int]:
        return iter(self._ranks)

    def __contains__(self, rank: object) -> bool:
        return rank in self._ranks

    def __getitem__(self, member: int) -> int:
        return self._ranks[member]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Group):
            return self._ranks == other._ranks
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._ranks)

    def __repr__(self) -> str:
        return f"rma.Group({list(self._ranks)})"


def _as_index(value: object) -> int:
    """Return `value` as a rank: an int or a NumPy integer; not a bool, a float or an rma constant."""
    if isinstance(value, bool):
        raise TypeError("rma.Group: a rank must be an integer, not bool")
    try:
        return operator.index(value)  # accepts NumPy integers, rejects floats and NumPy bools
    except TypeError:
        raise TypeError(f"rma.Group: a rank must be an integer, not {type(value).__name__}") from None
