"""rma.Comm: a communicator of ranks, for coordination (small pickled objects), not bulk data."""

from __future__ import annotations

import functools
import operator
import pickle
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ._native import _core
from .group import Group
from .ops import SUM, Op

__all__ = ["Comm", "Status", "MessageRequest", "ANY_SOURCE", "ANY_TAG"]

_PICKLE_PROTOCOL = pickle.HIGHEST_PROTOCOL

# recv's source and tag meaning "any": a receive takes the oldest message from any rank of the
# communicator, or with any tag (of the user's, 0 and up).
ANY_SOURCE: int = _core.ANY_SOURCE
ANY_TAG: int = _core.ANY_TAG

# What each op makes of two Python objects in comm.reduce and comm.allreduce (arrays use the
# core's element-wise ops instead). SUM on lists concatenates, as + does.
_OBJECT_OPS: dict[Op, Callable[[Any, Any], Any]] = {
    Op.SUM: operator.add,
    Op.PROD: operator.mul,
    Op.MIN: min,
    Op.MAX: max,
    Op.LAND: lambda a, b: bool(a) and bool(b),
    Op.LOR: lambda a, b: bool(a) or bool(b),
    Op.LXOR: lambda a, b: bool(a) != bool(b),
    Op.BAND: operator.and_,
    Op.BOR: operator.or_,
    Op.BXOR: operator.xor,
}


class Status:
    """Where a received message came from: pass one as ``status=`` to a receive to learn it.

    ``source`` is the sender's rank in the communicator and ``tag`` the message's tag; both
    are -1 until a receive fills them (``rma.PROC_NULL`` and -1 after a receive from PROC_NULL).
    """

    __slots__ = ("source", "tag")

    def __init__(self) -> None:
        self.source = -1
        self.tag = -1

    def __repr__(self) -> str:
        return f"<rma.Status source={self.source} tag={self.tag}>"


# What comm.isend and comm.irecv return: compiled (src/bindings/message_request.cpp), so that
# a received message goes into the request with no Python code in between.
MessageRequest = _core.MessageRequest


class Comm(_core.Comm):
    """Communicate Python objects among the ranks of a job or of a part of it.

    Obtain the communicator of every rank from ``rma.init()``; make smaller ones with
    ``split``. Objects travel pickled: use these calls for coordination, and windows for data.
    Blocking calls release the GIL, raise ``rma.PeerError`` if a rank they wait for dies and
    ``rma.RMATimeoutError`` after ``RMA_TIMEOUT`` seconds.

    ``send``, ``recv``, ``sendrecv``, ``isend``, ``irecv``, ``Allreduce``, ``Reduce`` and the
    barrier are compiled methods of the base class (src/bindings/comm_object.cpp, comm_array_calls.cpp):
    the calls made in loops, each checked (and its objects pickled) in one C call.
    """

    __slots__ = ("_core",)

    def __init__(self, core: _core.Communicator) -> None:
        self._core = core  # (the compiled base took it too, in __new__)

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
        """Wait until every rank of the communicator has called barrier.

        Example: ``win.flush_all(); comm.barrier()``: every rank's calls flushed before the
        barrier are complete at their targets before any rank goes past it.
        """
        # (A Python frame of its own: the stack dump of a rank stuck here says "in barrier".)
        self._barrier()

    def bcast(self, obj: Any = None, root: int = 0) -> Any:
        """Return root's `obj` on every rank.

        Example: ``config = comm.bcast(load_config() if comm.rank == 0 else None)``.
        """
        root = _rank(root, "bcast", "root")
        data = pickle.dumps(obj, _PICKLE_PROTOCOL) if self._core.rank == root else b""
        return pickle.loads(self._core.bcast(data, root))

    def gather(self, obj: Any, root: int = 0) -> list[Any] | None:
        """Return, on root, every rank's `obj` in rank order; None on the other ranks.

        Example: ``counts = comm.gather(len(mine))  # [n0, n1, ...] on rank 0``.
        """
        root = _rank(root, "gather", "root")
        items = self._core.gather(pickle.dumps(obj, _PICKLE_PROTOCOL), root)
        return [pickle.loads(item) for item in items] if self._core.rank == root else None

    def allgather(self, obj: Any) -> list[Any]:
        """Return every rank's `obj`, in rank order, on every rank.

        Example: ``hosts = comm.allgather(socket.gethostname())``.
        """
        return self._allgather(obj, "comm.allgather")

    def _allgather(self, obj: Any, call: str) -> list[Any]:
        """allgather for the library's own calls: its errors name `call` ("Window.allocate")."""
        return [pickle.loads(item) for item in self._core.allgather(pickle.dumps(obj, _PICKLE_PROTOCOL), call)]

    def reduce(self, obj: Any, op: Op | Callable[[Any, Any], Any] = SUM, root: int = 0) -> Any:
        """Return, on root, every rank's `obj` combined by `op` in rank order; None on the other ranks.

        `op` is an ``rma.Op`` (SUM adds with +, so lists concatenate; MIN, MAX, LAND, LOR, LXOR,
        BAND, BOR, BXOR) or any function of two objects; it need not be commutative.
        Example: ``total = comm.reduce(len(items), rma.SUM)``.
        """
        combine = _combiner(op, "reduce")
        root = _rank(root, "reduce", "root")
        items = self._core.gather(pickle.dumps(obj, _PICKLE_PROTOCOL), root, "comm.reduce")
        return _fold(combine, [pickle.loads(item) for item in items]) if self._core.rank == root else None

    def allreduce(self, obj: Any, op: Op | Callable[[Any, Any], Any] = SUM) -> Any:
        """Return every rank's `obj` combined by `op` in rank order, on every rank (op: as in ``reduce``).

        Example: ``total = comm.allreduce(len(my_items))``; ``best = comm.allreduce(score, op=rma.MAX)``.
        """
        combine = _combiner(op, "allreduce")
        # Every rank folds every rank's object, in rank order: one allgather (in shared memory,
        # one barrier, where the objects are small) rather than a gather and a bcast.
        return _fold(combine, self._allgather(obj, "comm.allreduce"))

    def scatter(self, objs: Sequence[Any] | None, root: int = 0) -> Any:
        """Return item `rank` of root's sequence `objs` (one item per rank; ignored on the other ranks).

        Example: ``mine = comm.scatter(chunks if comm.rank == 0 else None)``.
        """
        root = _rank(root, "scatter", "root")
        items = None
        if self._core.rank == root:
            if objs is None or len(objs) != self._core.size:
                count = "None" if objs is None else f"{len(objs)} items"
                raise ValueError(
                    f"rma: comm.scatter: root {root} must pass one item per rank ({self._core.size}), got {count}"
                )
            items = [pickle.dumps(obj, _PICKLE_PROTOCOL) for obj in objs]
        return pickle.loads(self._core.scatter(items, root))

    def alltoall(self, objs: Sequence[Any]) -> list[Any]:
        """Send ``objs[i]`` to rank i; return the list of what each rank sent to this one, in rank order.

        Example: ``incoming = comm.alltoall([outgoing[r] for r in range(comm.size)])``.
        """
        if len(objs) != self._core.size:
            raise ValueError(
                f"rma: comm.alltoall: rank {self._core.rank} must pass one item per rank ({self._core.size}), "
                f"got {len(objs)}"
            )
        return [
            pickle.loads(item) for item in self._core.alltoall([pickle.dumps(obj, _PICKLE_PROTOCOL) for obj in objs])
        ]

    def Bcast(self, buf: np.ndarray, root: int = 0) -> None:  # noqa: N802
        """Copy root's array `buf` into `buf` on every rank (writable, the same dtype and size everywhere).

        Example: ``grid = np.empty((64, 64)); comm.Bcast(grid, root=0)``.
        """
        root = _rank(root, "Bcast", "root")
        array = np.ascontiguousarray(buf)
        if array.dtype.hasobject:
            raise TypeError("rma: comm.Bcast: buf holds Python objects; use comm.bcast for objects")
        is_root = self._core.rank == root
        received = self._core.bcast(array.tobytes() if is_root else b"", root, "comm.Bcast")
        if len(received) != array.nbytes:
            raise ValueError(
                f"rma: comm.Bcast: rank {self._core.rank} passed {array.nbytes} bytes but root {root} sent "
                f"{len(received)}: buf must have the same dtype and size on every rank"
            )
        if not is_root:
            self._check_result(buf, array, "comm.Bcast", "buf")
            buf[...] = np.frombuffer(received, array.dtype).reshape(array.shape)

    def split_type(self, kind: str = "host", key: int = 0) -> Comm:
        """Return the communicator of the ranks that share this rank's host, ordered by `key`, then rank.

        Collective. ``kind`` is ``"host"`` (MPI's COMM_TYPE_SHARED: the ranks whose memory a
        ``Window.allocate_shared`` window can join). Example:
        ``node = comm.split_type("host"); win = rma.Window.allocate_shared(node, 8, np.int64)``.
        """
        if kind != "host":
            raise ValueError(f'rma: comm.split_type: kind must be "host", got {kind!r}')
        key = _integer(key, "split_type", "key")
        # The color of a host: the world rank of its first member, which its members agree on.
        color = self._core.members[self._core.host_ranks[0]]
        return type(self)(self._core.split(color, key, "comm.split_type"))

    def split(self, color: int | None, key: int = 0) -> Comm | None:
        """Return the communicator of the ranks that passed the same `color`, ordered by `key`.

        Collective. A rank passing ``color=None`` takes part but gets None back. Example:
        ``rows = comm.split(comm.rank // 4)  # ranks 0-3, 4-7, ...``.
        """
        color_value = -1 if color is None else _nonnegative(color, "split", "color")
        core = self._core.split(color_value, _integer(key, "split", "key"))
        return None if core is None else type(self)(core)

    def dup(self) -> Comm:
        """Return a new communicator of the same ranks, whose messages never mix with this one's.

        Example: ``library_comm = comm.dup()`` (a library's messages stay apart from the caller's).
        """
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
    # (A plain int in range returns on the first line.)
    if type(value) is int and value >= 0:
        return value
    number = _integer(value, call, name)
    if number < 0:
        raise ValueError(f"rma: comm.{call}: {name} must be >= 0, got {number}")
    return number


_rank = _nonnegative


def _combiner(op: object, call: str) -> Callable[[Any, Any], Any]:
    if isinstance(op, Op):
        if op not in _OBJECT_OPS:
            raise ValueError(f"rma: comm.{call}: {op.name} does not combine objects (use SUM, MAX, a function...)")
        return _OBJECT_OPS[op]
    if callable(op):
        return op  # type: ignore[return-value]
    raise TypeError(f"rma: comm.{call}: op must be an rma.Op or a function of two objects, not {type(op).__name__}")


def _fold(combine: Callable[[Any, Any], Any], items: list[Any]) -> Any:
    return functools.reduce(combine, items)
