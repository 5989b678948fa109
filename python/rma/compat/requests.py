"""MPI.Request and MPI.Status of the mpi4py facade: over rma's message requests (isend, irecv)
and window requests (Rput, Rget, Raccumulate, Rget_accumulate)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import rma as _rma

from .constants import ANY_SOURCE, ANY_TAG, UNDEFINED
from .errors import ERR_REQUEST, SUCCESS
from .errors import Exception as MPIException

__all__ = ["Request", "Status", "REQUEST_NULL"]


class Status:
    """What a receive learned: its source and tag (MPI_Status)."""

    def __init__(self, status: Status | None = None) -> None:
        self.source = status.source if status is not None else ANY_SOURCE
        self.tag = status.tag if status is not None else ANY_TAG
        self.error = status.error if status is not None else SUCCESS
        self._count = status._count if status is not None else 0

    def Get_source(self) -> int:  # noqa: N802 - mpi4py's names
        return self.source

    def Get_tag(self) -> int:  # noqa: N802
        return self.tag

    def Get_error(self) -> int:  # noqa: N802
        return self.error

    def Set_source(self, source: int) -> None:  # noqa: N802
        self.source = source

    def Set_tag(self, tag: int) -> None:  # noqa: N802
        self.tag = tag

    def Set_error(self, error: int) -> None:  # noqa: N802
        self.error = error

    def Get_count(self, datatype: Any = None) -> int:  # noqa: N802
        return self._count if datatype is None else self._count // max(datatype.Get_size(), 1)

    def Is_cancelled(self) -> bool:  # noqa: N802
        return False

    def _fill(self, source: int, tag: int) -> None:
        self.source, self.tag = source, tag


class Request:
    """A nonblocking operation (MPI_Request): a message's or a window call's."""

    __slots__ = ("_request", "_message", "_done", "_value", "_status")

    def __init__(self, request: Request | None = None) -> None:
        self._request = request._request if request is not None else None
        self._message = request._message if request is not None else False
        self._done = request._done if request is not None else True
        self._value: Any = request._value if request is not None else None
        self._status = request._status if request is not None else (ANY_SOURCE, ANY_TAG)

    @classmethod
    def _of(cls, request: Any, message: bool) -> Request:
        made = cls.__new__(cls)
        made._request, made._message, made._done, made._value = request, message, False, None
        made._status = (ANY_SOURCE, ANY_TAG)
        return made

    # ---- buffer-style (uppercase): completion only ----

    def Wait(self, status: Status | None = None) -> bool:  # noqa: N802
        self.wait(status)
        return True

    def Test(self, status: Status | None = None) -> bool:  # noqa: N802
        return self.test(status)[0]

    def Free(self) -> None:  # noqa: N802
        self._request, self._done = None, True

    def Cancel(self) -> None:  # noqa: N802
        raise NotImplementedError("rma.compat: Request.Cancel is not covered: rma's requests cannot be cancelled")

    def Get_status(self, status: Status | None = None) -> bool:  # noqa: N802
        return self.test(status)[0]

    # ---- object-style (lowercase): also the received object ----

    def wait(self, status: Status | None = None) -> Any:
        if not self._done:
            if self._request is None:
                raise MPIException(ERR_REQUEST, "rma.compat: Request.Wait: the request is MPI.REQUEST_NULL")
            if self._message:
                own = _rma.Status()
                self._value = self._request.wait(own)
                self._status = (own.source, own.tag)
            else:
                self._request.wait()
            self._done = True
        _fill(status, self)
        return self._value

    def test(self, status: Status | None = None) -> tuple[bool, Any]:
        if not self._done and self._request is not None:
            if self._message:
                own = _rma.Status()
                if not self._request.test(own):
                    return False, None
                return True, self.wait(status)
            if not self._request.test():
                return False, None
            self._done = True
        _fill(status, self)
        return True, self._value

    @staticmethod
    def Waitall(requests: Sequence[Request], statuses: list[Status] | None = None) -> bool:  # noqa: N802
        for index, request in enumerate(requests):
            request.Wait(statuses[index] if statuses is not None and index < len(statuses) else None)
        return True

    @staticmethod
    def waitall(requests: Sequence[Request], statuses: list[Status] | None = None) -> list[Any]:
        return [
            r.wait(statuses[i] if statuses is not None and i < len(statuses) else None) for i, r in enumerate(requests)
        ]

    @staticmethod
    def Testall(requests: Sequence[Request], statuses: list[Status] | None = None) -> bool:  # noqa: N802
        return all([r.Test() for r in requests])

    @staticmethod
    def testall(requests: Sequence[Request], statuses: list[Status] | None = None) -> tuple[bool, list[Any] | None]:
        flags = [r.test()[0] for r in requests]
        return (True, [r._value for r in requests]) if all(flags) else (False, None)

    @staticmethod
    def Waitany(requests: Sequence[Request], status: Status | None = None) -> int:  # noqa: N802
        if all(r._request is None for r in requests):
            return UNDEFINED
        pause = 0.00002
        while True:
            for index, request in enumerate(requests):
                if request._request is not None and request.Test(status):
                    return index
            # Polled, so it sleeps between rounds (growing to 1 ms): ranks share cores. A peer
            # that died ends the wait with rma's PeerError, raised by Test.
            time.sleep(pause)
            pause = min(pause * 2, 0.001)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Request):
            return NotImplemented
        return self._request is other._request

    def __hash__(self) -> int:
        return id(self._request)

    def __bool__(self) -> bool:
        return self._request is not None


def _fill(status: Status | None, request: Request) -> None:
    if status is not None and request._message:
        status._fill(*request._status)


REQUEST_NULL = Request()
