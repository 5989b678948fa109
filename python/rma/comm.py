"""rma.Comm: a communicator of ranks, for coordination (small pickled objects), not bulk data."""

from __future__ import annotations

import operator
import pickle
from typing import Any

from ._native import _core
from .group import Group

__all__ = ["Comm"]

_PICKLE_PROTOCOL = pickle.HIGHEST_PROTOCOL


class Comm:
    """Communicate Python objects among the ranks of a job or of a part of it.

    Obtain the communicator of every rank from ``rma.init()``; make smaller ones with
    ``split``. Objects travel pickled: use these calls for coordination, and windows for data.
    Blocking calls release the GIL, raise ``rma.PeerError`` if a rank they wait for dies and
    ``rma.RMATimeoutError`` after ``RMA_TIMEOUT`` seconds.
    """

    __slots__ = ("_core",)

    def __init__(self, core: _core.Communicator) -> None:
        self._core = core

    @property
    def rank(self) -> int:
        """Return this rank's number in the communicator."""
        return self._core.rank

    @property
    def size(self) -> int:
        """Return the number of ranks in the communicator."""
        return self._core.size

    @property
    def group(self) -> Group:
        """Return the group of all ranks of this communicator, in rank order."""
        return Group(range(self._core.size))

    def barrier(self) -> None:
        """Wait until every rank of the communicator has called barrier."""
        self._core.barrier()

    def bcast(self, obj: Any = None, root: int = 0) -> Any:
        """Return root's `obj` on every rank."""
        root = _rank(root, "bcast", "root")
        data = pickle.dumps(obj, _PICKLE_PROTOCOL) if self._core.rank == root else b""
        return pickle.loads(self._core.bcast(data, root))

    def gather(self, obj: Any, root: int = 0) -> list[Any] | None:
        """Return, on root, every rank's `obj` in rank order; None on the other ranks."""
        root = _rank(root, "gather", "root")
        items = self._core.gather(pickle.dumps(obj, _PICKLE_PROTOCOL), root)
        return [pickle.loads(item) for item in items] if self._core.rank == root else None

    def allgather(self, obj: Any) -> list[Any]:
        """Return every rank's `obj`, in rank order, on every rank."""
        return self._allgather(obj, "comm.allgather")

    def _allgather(self, obj: Any, call: str) -> list[Any]:
        """allgather for the library's own calls: its errors name `call` ("Window.allocate")."""
        return [pickle.loads(item) for item in self._core.allgather(pickle.dumps(obj, _PICKLE_PROTOCOL), call)]

    def send(self, obj: Any, dest: int, tag: int = 0) -> None:
        """Send `obj` to rank `dest`; return without waiting for the matching recv."""
        self._core.send(pickle.dumps(obj, _PICKLE_PROTOCOL), _rank(dest, "send", "dest"), _tag(tag, "send"))

    def recv(self, source: int, tag: int = 0) -> Any:
        """Return the oldest object sent by rank `source` with `tag`, waiting for one."""
        return pickle.loads(self._core.recv(_rank(source, "recv", "source"), _tag(tag, "recv")))

    def split(self, color: int | None, key: int = 0) -> Comm | None:
        """Return the communicator of the ranks that passed the same `color`, ordered by `key`.

        Collective. A rank passing ``color=None`` takes part but gets None back.
        """
        color_value = -1 if color is None else _nonnegative(color, "split", "color")
        core = self._core.split(color_value, _integer(key, "split", "key"))
        return None if core is None else Comm(core)

    def dup(self) -> Comm:
        """Return a new communicator of the same ranks, whose messages never mix with this one's."""
        return self.split(0, self._core.rank)  # type: ignore[return-value]

    def __repr__(self) -> str:
        return f"<rma.Comm rank {self.rank} of {self.size}>"

    def __reduce__(self):
        raise TypeError("rma.Comm cannot be pickled: it belongs to one process")


def _integer(value: object, call: str, name: str) -> int:
    try:
        return operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        raise TypeError(f"rma: comm.{call}: {name} must be an integer, not {type(value).__name__}") from None


def _nonnegative(value: object, call: str, name: str) -> int:
    number = _integer(value, call, name)
    if number < 0:
        raise ValueError(f"rma: comm.{call}: {name} must be >= 0, got {number}")
    return number


_rank = _nonnegative


def _tag(value: object, call: str) -> int:
    return _nonnegative(value, call, "tag")
