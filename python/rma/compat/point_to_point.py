"""Point-to-point calls of the mpi4py facade's communicators: the object calls (send, recv,
isend, irecv, sendrecv) over rma.Comm's messages. MPI.Comm inherits them (comm.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import rma as _rma

from .constants import ANY_SOURCE, ANY_TAG
from .errors import translated
from .not_covered import refuse
from .requests import Request, Status

__all__: list[str] = []


class PointToPoint:
    """The point-to-point calls of MPI.Comm, over `self._base` (the rma.Comm underneath)."""

    if TYPE_CHECKING:

        @property
        def _base(self) -> _rma.Comm: ...

    @translated
    def send(self, obj: Any, dest: int, tag: int = 0) -> None:
        self._base.send(obj, dest, tag)

    ssend = send

    @translated
    def recv(self, buf: Any = None, source: int = ANY_SOURCE, tag: int = ANY_TAG, status: Status | None = None) -> Any:
        own = _rma.Status()
        obj = self._base.recv(source, tag, own)
        if status is not None:
            status._fill(own.source, own.tag)
        return obj

    @translated
    def isend(self, obj: Any, dest: int, tag: int = 0) -> Request:
        request = Request._of(self._base.isend(obj, dest, tag), message=True)
        return request

    issend = isend

    @translated
    def irecv(self, buf: Any = None, source: int = ANY_SOURCE, tag: int = ANY_TAG) -> Request:
        return Request._of(self._base.irecv(source, tag), message=True)

    @translated
    def sendrecv(
        self,
        sendobj: Any,
        dest: int,
        sendtag: int = 0,
        recvbuf: Any = None,
        source: int = ANY_SOURCE,
        recvtag: int = ANY_TAG,
        status: Status | None = None,
    ) -> Any:
        own = _rma.Status()
        obj = self._base.sendrecv(sendobj, dest, sendtag, source=source, recvtag=recvtag, status=own)
        if status is not None:
            status._fill(own.source, own.tag)
        return obj


# mpi4py's point-to-point calls that rma has no counterpart for (yet).
refuse(
    PointToPoint,
    """
    Send Recv Isend Irecv Ssend Bsend Rsend Issend Ibsend Irsend Sendrecv Sendrecv_replace
    Send_init Recv_init Bsend_init Ssend_init Rsend_init Psend_init Precv_init
    Probe Iprobe Mprobe Improbe probe iprobe mprobe improbe bsend ibsend
    """,
    owner="Comm",
)
