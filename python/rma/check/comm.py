"""The communicator calls under RMA_CHECK: each that orders ranks carries the vector clock.

A message carries its sender's clock, and a receive merges it; a barrier, bcast, gather,
allgather (and so allreduce, made of one), scatter or alltoall carries the clocks its data goes
along with. The other reductions
(which combine objects or arrays on the way) begin with an exchange of clocks among all ranks:
that orders a little more than the reduction itself does, so it can hide a race, never report
one that is not there.
"""

from __future__ import annotations

from typing import Any

from ..comm import ANY_SOURCE, ANY_TAG, Comm, MessageRequest, Status
from ..ops import SUM
from . import clock

__all__ = ["CheckedComm"]


def _merged(wrapped: Any) -> Any:
    """Merge the clock a wrapped object carries and return the object."""
    if wrapped is None:  # a receive from PROC_NULL
        return None
    carried, obj = wrapped
    clock.merge(carried)
    return obj


class CheckedComm(Comm):
    __slots__ = ()

    def barrier(self) -> None:
        clock.meet(self._core, "comm.barrier")  # (the clocks' allreduce is the barrier)

    def bcast(self, obj: Any = None, root: int = 0) -> Any:
        return _merged(super().bcast((clock.publish(), obj), root))

    def gather(self, obj: Any, root: int = 0) -> list[Any] | None:
        items = super().gather((clock.publish(), obj), root)
        return None if items is None else [_merged(item) for item in items]

    def _allgather(self, obj: Any, call: str) -> list[Any]:
        return [_merged(item) for item in super()._allgather((clock.publish(), obj), call)]

    def send(self, obj: Any, dest: int, tag: int = 0) -> None:
        super().send((clock.publish(), obj), dest, tag)

    def recv(self, source: int, tag: int = 0, status: Status | None = None) -> Any:
        return _merged(super().recv(source, tag, status))

    def sendrecv(
        self,
        obj: Any,
        dest: int,
        sendtag: int = 0,
        *,
        source: int = ANY_SOURCE,
        recvtag: int = ANY_TAG,
        status: Status | None = None,
    ) -> Any:
        wrapped = (clock.publish(), obj)
        return _merged(super().sendrecv(wrapped, dest, sendtag, source=source, recvtag=recvtag, status=status))

    def isend(self, obj: Any, dest: int, tag: int = 0) -> MessageRequest:
        return super().isend((clock.publish(), obj), dest, tag)

    def irecv(self, source: int, tag: int = 0) -> MessageRequest:
        return self._irecv(source, tag, _merged)

    def scatter(self, objs: Any, root: int = 0) -> Any:
        now = clock.publish()
        return _merged(super().scatter(None if objs is None else [(now, obj) for obj in objs], root))

    def alltoall(self, objs: Any) -> list[Any]:
        now = clock.publish()
        return [_merged(item) for item in super().alltoall([(now, obj) for obj in objs])]

    def reduce(self, obj: Any, op: Any = SUM, root: int = 0) -> Any:
        self._exchange_clocks()
        return super().reduce(obj, op, root)

    def Allreduce(self, sendbuf: Any, recvbuf: Any = None, op: Any = SUM) -> None:  # noqa: N802
        self._exchange_clocks()
        super().Allreduce(sendbuf, recvbuf, op)

    def Reduce(self, sendbuf: Any, recvbuf: Any = None, op: Any = SUM, root: int = 0) -> None:  # noqa: N802
        self._exchange_clocks()
        super().Reduce(sendbuf, recvbuf, op, root)

    def Bcast(self, buf: Any, root: int = 0) -> None:  # noqa: N802
        self._exchange_clocks()
        super().Bcast(buf, root)

    def _exchange_clocks(self) -> None:
        """Before a reduction: every rank's clock to every rank. Nothing this rank does comes
        between the exchange and the reduction, so merging first orders what merging after
        would, and a reduction that fails on one rank (sizes differ) leaves no rank waiting."""
        clock.meet(self._core, "comm (RMA_CHECK's clocks)")
