"""MPI.Request and MPI.Prequest of the mpi4py facade (their statuses: status.py): over rma's message requests
(isend, irecv, the buffer calls' receives and synchronous sends) and window requests (Rput, Rget,
Raccumulate, Rget_accumulate).

A request runs an *operation*: an object with `wait()` (returning the received object, or None),
`test() -> bool`, and, once complete, `status` (source, tag, byte count, cancelled); `cancel()`
if it can be withdrawn. `Request._of` wraps rma's requests (and anything with `wait()` and
`test() -> bool`, such as a collective's) as operations. As in MPI, a request that completed
through Wait/Test becomes MPI.REQUEST_NULL; a persistent one (Prequest) becomes inactive instead
and may be started again."""

from __future__ import annotations

import itertools
import time
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import rma as _rma

from .._job import join as _join
from .._job import settings
from .constants import ANY_SOURCE, ANY_TAG, UNDEFINED
from .errors import ERR_REQUEST
from .errors import Exception as MPIException
from .not_covered import refuse
from .status import Status

__all__ = ["Request", "Prequest", "Status", "REQUEST_NULL"]  # (Status from status.py, as mpi4py has it here)


class Done:
    """An operation complete from the start: a send (rma's sends are eager), a receive from
    MPI.PROC_NULL. Its status: source, tag and count as given."""

    def __init__(self, source: int = ANY_SOURCE, tag: int = ANY_TAG, count: int = 0, value: Any = None) -> None:
        self.status = (source, tag, count, False)
        self.value = value

    def wait(self) -> Any:
        return self.value

    def test(self) -> bool:
        return True


class _Plain:
    """Something with wait() and test() -> bool (a window request, a collective's) as an operation."""

    def __init__(self, request: Any) -> None:
        self._request = request
        self.status = (ANY_SOURCE, ANY_TAG, 0, False)

    def wait(self) -> None:
        self._request.wait()

    def test(self) -> bool:
        return bool(self._request.test())


class _ObjectReceive:
    """rma's message request (an object receive, comm.irecv) as an operation."""

    def __init__(self, request: Any) -> None:
        self._request = request
        self.status = (ANY_SOURCE, ANY_TAG, 0, False)

    def wait(self) -> Any:
        own = _rma.Status()
        value = self._request.wait(own)
        self.status = (own.source, own.tag, 0, self.status[3])
        return value

    def test(self) -> bool:
        return bool(self._request.test())

    def cancel(self) -> None:
        if self._request.cancel():
            self.status = (ANY_SOURCE, ANY_TAG, 0, True)


# Live requests by handle, for Request.fromhandle.
_handles: weakref.WeakValueDictionary[int, _State] = weakref.WeakValueDictionary()
_next_handle = itertools.count(1)


class _State:
    """A request's state, shared by the copies of its handle (MPI.Request(request))."""

    __slots__ = ("operation", "start", "done", "value", "handle", "__weakref__")

    def __init__(self, operation: Any, start: Callable[[], Any] | None = None) -> None:
        self.operation, self.start = operation, start
        self.done, self.value = operation is None, None
        self.handle = next(_next_handle)
        _handles[self.handle] = self


class Request:
    """A nonblocking operation (MPI_Request): a message's, a window call's or a collective's."""

    __slots__ = ("_state",)

    def __init__(self, request: Request | None = None) -> None:
        if request is not None and not isinstance(request, Request):
            raise TypeError(f"MPI.Request() takes an MPI.Request, not {type(request).__name__}")
        self._state: _State | None = request._state if request is not None else None

    @classmethod
    def _of(cls, request: Any, message: bool = False) -> Request:
        """rma's message request (message=True), or anything with wait() and test() -> bool."""
        return cls._running(_ObjectReceive(request) if message else _Plain(request))

    @classmethod
    def _running(cls, operation: Any) -> Request:
        """A request for an operation (requests.Done, or one with wait/test/status)."""
        made = cls.__new__(cls)
        made._state = _State(operation)
        return made

    # ---- completion of one request ----

    def _complete(self, wait: bool, status: Status | None, free: bool = True) -> bool:
        """Completes (wait) or tests the request; fills status when complete. A completed
        request becomes REQUEST_NULL (a persistent one inactive) unless free is False."""
        state = self._state
        if state is None or state.operation is None:
            _fill(status, None)
            return True
        if not state.done:
            operation = state.operation
            if not wait and not operation.test():
                return False
            state.value = operation.wait()
            state.done = True
        _fill(status, state.operation)
        if free:
            self._release()
        return True

    def _release(self) -> None:
        state = self._state
        if state is None:
            return
        if state.start is not None:
            state.operation = None  # inactive, startable again
        else:
            self._state = None

    def _value(self) -> Any:
        return self._state.value if self._state is not None else None

    # ---- buffer-style (uppercase): completion only ----

    def Wait(self, status: Status | None = None) -> bool:  # noqa: N802
        self._complete(True, status)
        return True

    def Test(self, status: Status | None = None) -> bool:  # noqa: N802
        return self._complete(False, status)

    def Get_status(self, status: Status | None = None) -> bool:  # noqa: N802
        """Whether the request is complete (filling status), without freeing it."""
        return self._complete(False, status, free=False)

    get_status = Get_status

    def Free(self) -> None:  # noqa: N802
        """Frees the handle. A send under way has left already (and a synchronous one still
        matches its receive); a receive under way is withdrawn, its message (if one came) going
        to the next matching receive: nothing is lost, but the buffer is not filled.
        MPI.REQUEST_NULL cannot be freed (ERR_REQUEST)."""
        if self._state is None:
            raise MPIException(ERR_REQUEST, "rma.compat: Request.Free: the request is MPI.REQUEST_NULL")
        self._state = None

    def free(self) -> None:
        self.Free()

    def Cancel(self) -> None:  # noqa: N802
        """Withdraws a receive that no message has matched yet (its status then says cancelled).
        A send cannot be withdrawn (rma's messages leave at once): the request stays as it was,
        and its status says not cancelled, as MPI allows. MPI.REQUEST_NULL: ERR_REQUEST."""
        state = self._state
        if state is None:
            raise MPIException(ERR_REQUEST, "rma.compat: Request.Cancel: the request is MPI.REQUEST_NULL")
        if state is not None and state.operation is not None and not state.done:
            cancel = getattr(state.operation, "cancel", None)
            if cancel is not None:
                cancel()

    cancel = Cancel

    # ---- object-style (lowercase): also the received object ----

    def wait(self, status: Status | None = None) -> Any:
        state = self._state
        self._complete(True, status)
        return state.value if state is not None else None

    def test(self, status: Status | None = None) -> tuple[bool, Any]:
        state = self._state
        if not self._complete(False, status):
            return False, None
        return True, state.value if state is not None else None

    # ---- many requests ----

    @staticmethod
    def Waitall(requests: Sequence[Request], statuses: list[Status] | None = None) -> bool:  # noqa: N802
        Request.waitall(requests, statuses)
        return True

    @staticmethod
    def waitall(requests: Sequence[Request], statuses: list[Status] | None = None) -> list[Any]:
        slots = _statuses(statuses, len(requests))
        return [r.wait(slots[i]) for i, r in enumerate(requests)]

    @staticmethod
    def Testall(requests: Sequence[Request], statuses: list[Status] | None = None) -> bool:  # noqa: N802
        return Request.testall(requests, statuses)[0]

    @staticmethod
    def testall(requests: Sequence[Request], statuses: list[Status] | None = None) -> tuple[bool, list[Any] | None]:
        # All or nothing: none is freed unless every one is complete.
        if not all(r.Get_status() for r in requests):
            return False, None
        return True, Request.waitall(requests, statuses)

    @staticmethod
    def Get_status_all(requests: Sequence[Request], statuses: list[Status] | None = None) -> bool:  # noqa: N802
        slots = _statuses(statuses, len(requests))
        if not all(r.Get_status() for r in requests):
            return False
        for i, r in enumerate(requests):
            r.Get_status(slots[i])
        return True

    get_status_all = Get_status_all

    @staticmethod
    def Waitany(requests: Sequence[Request], status: Status | None = None) -> int:  # noqa: N802
        return Request.waitany(requests, status)[0]

    @staticmethod
    def waitany(requests: Sequence[Request], status: Status | None = None) -> tuple[int, Any]:
        active = [i for i, r in enumerate(requests) if r._active()]
        if len(active) == 1:  # (one left: its own wait, which sleeps until it completes)
            state = requests[active[0]]._state
            requests[active[0]]._complete(True, status)
            return active[0], state.value if state is not None else None
        found: list[tuple[int, Any]] = []

        def any_done() -> bool:
            index, flag, value = Request.testany(requests, status)
            found.append((index, value))
            return flag

        _polled(any_done, "Request.Waitany")
        return found[-1]

    @staticmethod
    def Testany(requests: Sequence[Request], status: Status | None = None) -> tuple[int, bool]:  # noqa: N802
        index, flag, _ = Request.testany(requests, status)
        return index, flag

    @staticmethod
    def testany(requests: Sequence[Request], status: Status | None = None) -> tuple[int, bool, Any]:
        active = [i for i, r in enumerate(requests) if r._active()]
        for index in active:
            request = requests[index]
            state = request._state
            if request._complete(False, status):
                return index, True, state.value if state is not None else None
        if not active:
            _fill(status, None)
            return UNDEFINED, True, None
        return UNDEFINED, False, None

    @staticmethod
    def Get_status_any(requests: Sequence[Request], status: Status | None = None) -> tuple[int, bool]:  # noqa: N802
        active = [i for i, r in enumerate(requests) if r._active()]
        for index in active:
            if requests[index].Get_status(status):
                return index, True
        if not active:
            _fill(status, None)
            return UNDEFINED, True
        return UNDEFINED, False

    get_status_any = Get_status_any

    @staticmethod
    def Waitsome(requests: Sequence[Request], statuses: list[Status] | None = None) -> list[int] | None:  # noqa: N802
        return Request.waitsome(requests, statuses)[0]

    @staticmethod
    def waitsome(
        requests: Sequence[Request], statuses: list[Status] | None = None
    ) -> tuple[list[int] | None, list[Any] | None]:
        active = [i for i, r in enumerate(requests) if r._active()]
        if len(active) == 1:  # (one left: its own wait, which sleeps until it completes)
            status = Status()
            value = requests[active[0]].wait(status)
            _give(statuses, [status])
            return active, [value]
        found: list[tuple[list[int] | None, list[Any] | None]] = []

        def some_done() -> bool:
            indices, values = Request.testsome(requests, statuses)
            found.append((indices, values))
            return indices is None or bool(indices)

        _polled(some_done, "Request.Waitsome")
        return found[-1]

    @staticmethod
    def Testsome(requests: Sequence[Request], statuses: list[Status] | None = None) -> list[int] | None:  # noqa: N802
        return Request.testsome(requests, statuses)[0]

    @staticmethod
    def testsome(
        requests: Sequence[Request], statuses: list[Status] | None = None
    ) -> tuple[list[int] | None, list[Any] | None]:
        active = [i for i, r in enumerate(requests) if r._active()]
        if not active:
            return None, None
        indices, values, found = [], [], []
        for index in active:
            request = requests[index]
            state = request._state
            status = Status()
            if request._complete(False, status):
                indices.append(index)
                values.append(state.value if state is not None else None)
                found.append(status)
        _give(statuses, found)
        return indices, values

    @staticmethod
    def Get_status_some(requests: Sequence[Request], statuses: list[Status] | None = None) -> list[int] | None:  # noqa: N802
        active = [i for i, r in enumerate(requests) if r._active()]
        if not active:
            return None
        indices, found = [], []
        for index in active:
            status = Status()
            if requests[index].Get_status(status):
                indices.append(index)
                found.append(status)
        _give(statuses, found)
        return indices

    get_status_some = Get_status_some

    def _active(self) -> bool:
        return self._state is not None and self._state.operation is not None

    # ---- handles ----

    @property
    def handle(self) -> int:
        return self._state.handle if self._state is not None else 0

    @classmethod
    def fromhandle(cls, handle: int) -> Request:
        made = cls.__new__(cls)
        made._state = _handles.get(handle) if handle else None
        return made

    def toint(self) -> int:
        return -1  # (no Fortran or integer handles: mpi4py's tests skip what needs them)

    def py2f(self) -> int:
        return -1

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Request):
            return NotImplemented
        return self._state is other._state

    def __hash__(self) -> int:
        return id(self._state)

    def __bool__(self) -> bool:
        return self._state is not None

    def __reduce__(self) -> str | tuple[Any, ...]:
        # As mpi4py's: REQUEST_NULL pickles by name; a request under way belongs to this process.
        if self is REQUEST_NULL:
            return "REQUEST_NULL"
        if self._state is None:
            return (type(self), ())
        raise ValueError("rma.compat: an MPI.Request cannot be pickled: it belongs to this process")


class Prequest(Request):
    """A persistent request (MPI_Send_init, MPI_Recv_init): Start() runs its operation again;
    completing it leaves it inactive, not null, until Free()."""

    __slots__ = ()

    def __init__(self, request: Request | None = None) -> None:
        if request is not None and not isinstance(request, Prequest):
            raise TypeError(f"MPI.Prequest() takes an MPI.Prequest, not {type(request).__name__}")
        super().__init__(request)

    @classmethod
    def _persistent(cls, start: Callable[[], Any]) -> Prequest:
        """An inactive persistent request whose Start() calls start() for a new operation."""
        made = cls.__new__(cls)
        made._state = _State(None, start)
        return made

    def Start(self) -> None:  # noqa: N802
        state = self._state
        if state is None or state.start is None:
            raise MPIException(ERR_REQUEST, "rma.compat: Prequest.Start: the request is MPI.REQUEST_NULL")
        if state.operation is not None and not state.done:
            raise MPIException(ERR_REQUEST, "rma.compat: Prequest.Start: the request is already active")
        state.operation, state.done, state.value = state.start(), False, None

    start = Start

    @staticmethod
    def Startall(requests: Sequence[Prequest]) -> None:  # noqa: N802
        for request in requests:
            request.Start()

    startall = Startall


def _polled(done: Callable[[], bool], call: str) -> None:
    """Test until done() holds, for the waits over several requests: polled, so it sleeps between
    rounds (growing to 1 ms: ranks share cores), and ends at rma's deadline (RMA_TIMEOUT) as a
    single request's wait does. A peer that died ends it with rma's PeerError, raised by a test."""
    limit = settings.timeout()
    deadline = time.monotonic() + limit if limit > 0 else None
    pause = 0.00002
    while not done():
        if deadline is not None and time.monotonic() > deadline:
            rank = f"rank {_join.init().rank}: " if _join.is_initialized() else ""
            raise _rma.RMATimeoutError(f"rma: {rank}{call} did not finish within {limit:g} s (RMA_TIMEOUT)")
        time.sleep(pause)
        pause = min(pause * 2, 0.001)


def _fill(status: Status | None, operation: Any) -> None:
    """Fills status from a complete operation (None: the empty status of a null request)."""
    if status is None:
        return
    if operation is None:
        status._fill(ANY_SOURCE, ANY_TAG)
        return
    # (An operation without a status, such as a collective's, completes with the empty one.)
    source, tag, count, cancelled = getattr(operation, "status", (ANY_SOURCE, ANY_TAG, 0, False))
    status._fill(source, tag, count, cancelled)


def _statuses(statuses: list[Status] | None, count: int) -> list[Status | None]:
    """One status (or None) per request: a list given is grown to `count` in place."""
    if statuses is None:
        return [None] * count
    if isinstance(statuses, list):
        while len(statuses) < count:
            statuses.append(Status())
    return [statuses[i] if i < len(statuses) else None for i in range(count)]


def _give(statuses: list[Status] | None, found: list[Status]) -> None:
    """The statuses of the requests that completed, into the caller's list."""
    if isinstance(statuses, list):
        for i, status in enumerate(found):
            if i < len(statuses):
                statuses[i] = status
            else:
                statuses.append(status)


REQUEST_NULL = Request()
PREQUEST_NULL = Prequest()

# Integer and Fortran handles (toint() and py2f() say -1: there are none) and partitioned
# communication (MPI_Psend_init) stay out.
refuse(Request, "f2py fromint")
refuse(Prequest, "Parrived Pready Pready_list Pready_range")
