"""Collective calls of the mpi4py facade's communicators: the object collectives (bcast,
gather, reduce...) and the buffer collectives over rma.Comm's. MPI.Comm inherits them (comm.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

import rma as _rma

from .buffers import origin_elements, result_elements
from .errors import TRANSLATED, as_mpi, translated
from .memory import IN_PLACE
from .not_covered import refuse
from .ops import SUM, Op

__all__: list[str] = []


class Collectives:
    """The collective calls of MPI.Comm, over `self._base` (the rma.Comm underneath)."""

    if TYPE_CHECKING:

        @property
        def _base(self) -> _rma.Comm: ...

    # ---- object calls (pickled Python objects) ----

    def Barrier(self) -> None:  # noqa: N802
        try:
            self._base.barrier()
        except TRANSLATED as exc:  # (in place, not through `translated`: a barrier is called in loops)
            raise as_mpi(exc) from None

    barrier = Barrier

    @translated
    def bcast(self, obj: Any = None, root: int = 0) -> Any:
        return self._base.bcast(obj, root)

    @translated
    def gather(self, sendobj: Any, root: int = 0) -> list[Any] | None:
        return self._base.gather(sendobj, root)

    @translated
    def allgather(self, sendobj: Any) -> list[Any]:
        return self._base.allgather(sendobj)

    @translated
    def scatter(self, sendobj: Any = None, root: int = 0) -> Any:
        return self._base.scatter(sendobj, root)

    @translated
    def alltoall(self, sendobj: Any) -> list[Any]:
        return self._base.alltoall(sendobj)

    @translated
    def reduce(self, sendobj: Any, op: Op | Any = SUM, root: int = 0) -> Any:
        return self._base.reduce(sendobj, _combine(op), root)

    @translated
    def allreduce(self, sendobj: Any, op: Op | Any = SUM) -> Any:
        return self._base.allreduce(sendobj, _combine(op))

    # ---- buffer calls that rma has (NumPy arrays in place) ----

    @translated
    def Bcast(self, buf: Any, root: int = 0) -> None:  # noqa: N802
        data = result_elements(buf, "Comm.Bcast")
        self._base.Bcast(data, root)

    @translated
    def Allreduce(self, sendbuf: Any, recvbuf: Any, op: Op = SUM) -> None:  # noqa: N802
        result = result_elements(recvbuf, "Comm.Allreduce")
        data = (
            result.copy() if sendbuf is IN_PLACE else np.ascontiguousarray(origin_elements(sendbuf, "Comm.Allreduce"))
        )
        self._base.Allreduce(data, result, op._window_op("Allreduce"))

    @translated
    def Reduce(self, sendbuf: Any, recvbuf: Any, op: Op = SUM, root: int = 0) -> None:  # noqa: N802
        mine = self._base.rank == root
        if sendbuf is IN_PLACE:
            data = result_elements(recvbuf, "Comm.Reduce").copy()
        else:
            data = np.ascontiguousarray(origin_elements(sendbuf, "Comm.Reduce"))
        result = result_elements(recvbuf, "Comm.Reduce") if mine else None
        self._base.Reduce(data, result, op._window_op("Reduce"), root)


def _combine(op: Any) -> Any:
    """An MPI.Op as the function of two objects that rma's object reductions take."""
    if isinstance(op, Op):
        return op.__call__
    return op


# mpi4py's collective calls that rma has no counterpart for (yet).
refuse(
    Collectives,
    """
    Gather Gatherv Scatter Scatterv Allgather Allgatherv Alltoall Alltoallv Alltoallw
    Reduce_scatter Reduce_scatter_block Scan Exscan scan exscan
    Ibarrier Ibcast Igather Igatherv Iscatter Iscatterv Iallgather Iallgatherv Ialltoall Ialltoallv
    Ialltoallw Ireduce Iallreduce Ireduce_scatter Ireduce_scatter_block Iscan Iexscan ibarrier
    """,
    owner="Comm",
)
