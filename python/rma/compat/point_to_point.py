"""Point-to-point calls of the mpi4py facade's communicators, MPI.Comm inherits them (comm.py):
the object calls (send, recv, isend, irecv, sendrecv, ssend, issend, bsend, ibsend, probes) over
rma.Comm's messages, and the buffer calls (Send, Recv, Ssend, Bsend, Rsend and their
nonblocking and persistent forms, Sendrecv, Sendrecv_replace, Probe, Mprobe).

A buffer's bytes go as they are (rma's raw messages, never pickled), so a receive's count is
the bytes sent; a receive scatters them into its buffer's datatype (holes too).

rma's sends are eager: the message leaves at once and the call returns, so Send, Bsend and
Rsend are the same send (the attached buffer of Bsend is taken and returned, never needed),
and a nonblocking send is complete when it returns. A synchronous send (Ssend, Issend, ssend)
is not: it completes only once a receive at the destination has matched its message (the
receiver's acknowledgement comes back)."""

from __future__ import annotations

import pickle
import warnings
from typing import TYPE_CHECKING, Any

import rma as _rma

from .buffers import message_bytes, result_runs
from .constants import ANY_SOURCE, ANY_TAG, PROC_NULL
from .errors import translated
from .memory import _bytes_or_type_error
from .message import Message
from .message_clock import payload_bytes, stamped, unstamped, wrap_object
from .not_covered import refuse
from .requests import Done, Prequest, Request, Status, _fill

__all__ = [
    "Attach_buffer",
    "Detach_buffer",
    "Flush_buffer",
    "Iflush_buffer",
    "BSEND_OVERHEAD",
    "BUFFER_AUTOMATIC",
    "BufferAutomaticType",
]

# MPI_BSEND_OVERHEAD: what Bsend needs beyond the message in an attached buffer. rma's sends
# never use the buffer, so nothing; programs size their buffers with it and attach them as usual.
BSEND_OVERHEAD = 0


class BufferAutomaticType:
    """The type of MPI.BUFFER_AUTOMATIC, the buffer that asks MPI to buffer Bsend itself: the one
    instance there is (rma buffers every send already)."""

    _instance: BufferAutomaticType | None = None

    def __new__(cls) -> BufferAutomaticType:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __bool__(self) -> bool:
        return False

    def __int__(self) -> int:
        return 0

    def __reduce__(self) -> str:
        return "BUFFER_AUTOMATIC"

    def __repr__(self) -> str:
        return "BUFFER_AUTOMATIC"


BUFFER_AUTOMATIC = BufferAutomaticType()
_attached: list[Any] = []


def Attach_buffer(buf: Any) -> None:  # noqa: N802 - mpi4py's names
    """Takes the buffer that Bsend would use: rma's sends are eager and never need it. It must
    be a writable buffer, as MPI's (a read-only one is a BufferError, as in mpi4py)."""
    _bytes_or_type_error(buf, writable=True, call="MPI.Attach_buffer")
    _attached[:] = [buf]


def Detach_buffer() -> Any:  # noqa: N802
    """Gives the attached buffer back (None if there is none)."""
    return _attached.pop() if _attached else None


def Flush_buffer() -> None:  # noqa: N802
    """Nothing waits in a send buffer: rma's sends leave at once."""


def Iflush_buffer() -> Request:  # noqa: N802
    return Request._running(Done())


class BufferReceive:
    """A buffer receive under way: the message's bytes, once they come, scattered into `runs`."""

    def __init__(self, base: _rma.Comm, runs: Any, source: int, tag: int) -> None:
        self._request = base._irecv_raw(source, tag)
        self._runs, self._rank = runs, base.rank
        self._cancelled = False
        self.status = (ANY_SOURCE, ANY_TAG, 0, False)

    def test(self) -> bool:
        return bool(self._request.test())

    def wait(self) -> None:
        own = _rma.Status()
        data = self._request.wait(own)
        if not self._cancelled:
            data = unstamped(data)
            self._runs.fill(data, f"rank {own.source}'s message (tag {own.tag}) to rank {self._rank}")
            self.status = (own.source, own.tag, len(data), False)

    def cancel(self) -> None:
        if self._request.cancel():
            self._cancelled = True
            self.status = (ANY_SOURCE, ANY_TAG, 0, True)


class SynchronousSend:
    """A synchronous send under way: complete once the destination's receive matched it."""

    def __init__(self, base: _rma.Comm, data: Any, dest: int, tag: int) -> None:
        self._base, self._dest = base, dest
        self._id = base._ssend_raw(data, dest, tag)
        self._matched = self._id < 0  # (PROC_NULL)
        self.status = (ANY_SOURCE, ANY_TAG, 0, False)

    def test(self) -> bool:
        if not self._matched:
            self._matched = self._base._ssend_done(self._dest, self._id, False)
        return self._matched

    def wait(self) -> None:
        if not self._matched:
            self._matched = self._base._ssend_done(self._dest, self._id, True)


class SendThenReceive:
    """Isendrecv: its send already left (eager); complete with its receive."""

    def __init__(self, receive: Any) -> None:
        self._receive = receive

    @property
    def status(self) -> tuple[int, int, int, bool]:
        return self._receive.status

    def test(self) -> bool:
        return self._receive.test()

    def wait(self) -> Any:
        return self._receive.wait()


class PointToPoint:
    """The point-to-point calls of MPI.Comm, over `self._base` (the rma.Comm underneath)."""

    if TYPE_CHECKING:

        @property
        def _base(self) -> _rma.Comm: ...

    # ---- objects (pickled) ----

    @translated
    def send(self, obj: Any, dest: int, tag: int = 0) -> None:
        self._base.send(obj, dest, tag)

    bsend = send

    @translated
    def ssend(self, obj: Any, dest: int, tag: int = 0) -> None:
        SynchronousSend(self._base, _pickled(obj), dest, tag).wait()

    @translated
    def recv(self, buf: Any = None, source: int = ANY_SOURCE, tag: int = ANY_TAG, status: Status | None = None) -> Any:
        if buf is not None:
            warnings.warn("the 'buf' argument is deprecated", UserWarning, stacklevel=2)
        own = _rma.Status()
        obj = self._base.recv(source, tag, own)
        if status is not None:
            status._fill(own.source, own.tag)
        return obj

    @translated
    def isend(self, obj: Any, dest: int, tag: int = 0) -> Request:
        self._base.send(obj, dest, tag)
        return Request._running(Done())

    ibsend = isend

    @translated
    def issend(self, obj: Any, dest: int, tag: int = 0) -> Request:
        return Request._running(SynchronousSend(self._base, _pickled(obj), dest, tag))

    @translated
    def irecv(self, buf: Any = None, source: int = ANY_SOURCE, tag: int = ANY_TAG) -> Request:
        if source == PROC_NULL:
            return Request._running(Done(PROC_NULL, ANY_TAG))
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

    @translated
    def probe(self, source: int = ANY_SOURCE, tag: int = ANY_TAG, status: Status | None = None) -> bool:
        return self.Probe(source, tag, status)

    @translated
    def iprobe(self, source: int = ANY_SOURCE, tag: int = ANY_TAG, status: Status | None = None) -> bool:
        return self.Iprobe(source, tag, status)

    @translated
    def mprobe(self, source: int = ANY_SOURCE, tag: int = ANY_TAG, status: Status | None = None) -> Message:
        return self.Mprobe(source, tag, status)

    @translated
    def improbe(self, source: int = ANY_SOURCE, tag: int = ANY_TAG, status: Status | None = None) -> Message | None:
        return self.Improbe(source, tag, status)

    # ---- buffers (raw bytes) ----

    @translated
    def Send(self, buf: Any, dest: int, tag: int = 0) -> None:  # noqa: N802
        self._eager(buf, dest, tag, "Send")

    Bsend = Send
    Rsend = Send

    @translated
    def Ssend(self, buf: Any, dest: int, tag: int = 0) -> None:  # noqa: N802
        self._synchronous(buf, dest, tag, "Ssend").wait()

    @translated
    def Isend(self, buf: Any, dest: int, tag: int = 0) -> Request:  # noqa: N802
        return Request._running(self._eager(buf, dest, tag, "Isend"))

    Ibsend = Isend
    Irsend = Isend

    @translated
    def Issend(self, buf: Any, dest: int, tag: int = 0) -> Request:  # noqa: N802
        return Request._running(self._synchronous(buf, dest, tag, "Issend"))

    @translated
    def Recv(  # noqa: N802
        self, buf: Any, source: int = ANY_SOURCE, tag: int = ANY_TAG, status: Status | None = None
    ) -> None:
        operation = self._receive(buf, source, tag, "Recv")
        operation.wait()
        _fill(status, operation)

    @translated
    def Irecv(self, buf: Any, source: int = ANY_SOURCE, tag: int = ANY_TAG) -> Request:  # noqa: N802
        return Request._running(self._receive(buf, source, tag, "Irecv"))

    @translated
    def Sendrecv(  # noqa: N802
        self,
        sendbuf: Any,
        dest: int,
        sendtag: int = 0,
        recvbuf: Any = None,
        source: int = ANY_SOURCE,
        recvtag: int = ANY_TAG,
        status: Status | None = None,
    ) -> None:
        # The receive is posted first, so its buffer's errors come before anything moves; the
        # send never waits for its receive, so no order of the ranks deadlocks.
        operation = self._receive(recvbuf, source, recvtag, "Sendrecv")
        self.Send(sendbuf, dest, sendtag)
        operation.wait()
        _fill(status, operation)

    @translated
    def Sendrecv_replace(  # noqa: N802
        self,
        buf: Any,
        dest: int,
        sendtag: int = 0,
        source: int = ANY_SOURCE,
        recvtag: int = ANY_TAG,
        status: Status | None = None,
    ) -> None:
        operation = self._receive(buf, source, recvtag, "Sendrecv_replace")
        self.Send(buf, dest, sendtag)  # (its bytes have left before any message can land)
        operation.wait()
        _fill(status, operation)

    @translated
    def Isendrecv(  # noqa: N802
        self,
        sendbuf: Any,
        dest: int,
        sendtag: int = 0,
        recvbuf: Any = None,
        source: int = ANY_SOURCE,
        recvtag: int = ANY_TAG,
    ) -> Request:
        operation = self._receive(recvbuf, source, recvtag, "Isendrecv")
        self.Send(sendbuf, dest, sendtag)
        return Request._running(SendThenReceive(operation))

    @translated
    def Isendrecv_replace(  # noqa: N802
        self, buf: Any, dest: int, sendtag: int = 0, source: int = ANY_SOURCE, recvtag: int = ANY_TAG
    ) -> Request:
        operation = self._receive(buf, source, recvtag, "Isendrecv_replace")
        self.Send(buf, dest, sendtag)
        return Request._running(SendThenReceive(operation))

    # ---- persistent requests: each Start runs the call again, with the buffer's data then ----

    @translated
    def Send_init(self, buf: Any, dest: int, tag: int = 0) -> Prequest:  # noqa: N802
        return Prequest._persistent(lambda: self._eager(buf, dest, tag, "Send_init"))

    Bsend_init = Send_init
    Rsend_init = Send_init

    @translated
    def Ssend_init(self, buf: Any, dest: int, tag: int = 0) -> Prequest:  # noqa: N802
        return Prequest._persistent(lambda: self._synchronous(buf, dest, tag, "Ssend_init"))

    @translated
    def Recv_init(self, buf: Any, source: int = ANY_SOURCE, tag: int = ANY_TAG) -> Prequest:  # noqa: N802
        return Prequest._persistent(lambda: self._receive(buf, source, tag, "Recv_init"))

    # ---- probes ----

    @translated
    def Probe(self, source: int = ANY_SOURCE, tag: int = ANY_TAG, status: Status | None = None) -> bool:  # noqa: N802
        """Waits for a message a receive of (source, tag) would take; leaves it there."""
        return self._probe(source, tag, status, wait=True)

    @translated
    def Iprobe(self, source: int = ANY_SOURCE, tag: int = ANY_TAG, status: Status | None = None) -> bool:  # noqa: N802
        return self._probe(source, tag, status, wait=False)

    @translated
    def Mprobe(self, source: int = ANY_SOURCE, tag: int = ANY_TAG, status: Status | None = None) -> Message:  # noqa: N802
        """Waits for such a message and takes it out: only the Message returned receives it."""
        message = self._mprobe(source, tag, status, wait=True)
        assert message is not None  # (a wait returns with one)
        return message

    @translated
    def Improbe(  # noqa: N802
        self, source: int = ANY_SOURCE, tag: int = ANY_TAG, status: Status | None = None
    ) -> Message | None:
        return self._mprobe(source, tag, status, wait=False)

    def _probe(self, source: int, tag: int, status: Status | None, *, wait: bool) -> bool:
        """Whether a message (source, tag) is there (waiting for one if `wait`); its status."""
        if source == PROC_NULL:
            _fill(status, Done(PROC_NULL, ANY_TAG))
            return True
        seen = self._base._probe(source, tag, wait)
        if seen is None:
            return False
        found, message_tag, count = seen
        _fill(status, Done(found, message_tag, payload_bytes(count)))
        return True

    def _mprobe(self, source: int, tag: int, status: Status | None, *, wait: bool) -> Message | None:
        """Such a message taken out as a Message (waiting for one if `wait`), or None."""
        if source == PROC_NULL:
            _fill(status, Done(PROC_NULL, ANY_TAG))
            return Message._no_proc()
        taken = self._base._mprobe(source, tag, wait)
        if taken is None:
            return None
        message = Message._taken(*taken)
        _fill(status, message._done())
        return message

    # ---- operations the calls share ----

    def _receive(self, buf: Any, source: int, tag: int, call: str) -> Any:
        if source == PROC_NULL:
            return Done(PROC_NULL, ANY_TAG)
        return BufferReceive(self._base, result_runs(buf, f"Comm.{call}"), source, tag)

    def _eager(self, buf: Any, dest: int, tag: int, call: str) -> Done:
        if dest != PROC_NULL:
            self._base._send_raw(_bytes_of(buf, call), dest, tag)
        return Done()

    def _synchronous(self, buf: Any, dest: int, tag: int, call: str) -> Any:
        if dest == PROC_NULL:
            return Done()
        return SynchronousSend(self._base, _bytes_of(buf, call), dest, tag)


def _bytes_of(buf: Any, call: str) -> memoryview | bytes:
    """A send buffer's bytes in type-map order (a view where the datatype is contiguous), as a
    raw message carries them (with the clock under RMA_CHECK)."""
    return stamped(message_bytes(buf, f"Comm.{call}"))


def _pickled(obj: Any) -> bytes:
    """An object as the facade's own object messages carry it (as rma.Comm's send would)."""
    return pickle.dumps(wrap_object(obj), protocol=pickle.HIGHEST_PROTOCOL)


# mpi4py's point-to-point calls that rma has no counterpart for (yet).
refuse(
    PointToPoint,
    """
    Psend_init Precv_init
    """,
    owner="Comm",
)
