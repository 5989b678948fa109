"""MPI.Message of the mpi4py facade: a message a matched probe (Comm.Mprobe, Improbe, mprobe,
improbe) took out of rma's matching, so that no other receive can get it; its own receive
(Recv, Irecv, recv, irecv) then takes it, once. MESSAGE_NO_PROC is what a probe of
MPI.PROC_NULL finds: receiving it receives nothing, from PROC_NULL."""

from __future__ import annotations

import pickle
from typing import Any

from .buffers import result_runs
from .constants import ANY_TAG, PROC_NULL
from .errors import ERR_REQUEST
from .errors import Exception as MPIException
from .message_clock import payload_bytes, unstamped, unwrap_object
from .not_covered import refuse
from .requests import Done, Request, Status, _fill

__all__ = ["Message", "MESSAGE_NULL", "MESSAGE_NO_PROC"]


class Message:
    """A matched message (MPI_Message) until it is received."""

    __slots__ = ("_source", "_tag", "_data", "_kind")

    def __init__(self, message: Message | None = None) -> None:
        if message is not None and not isinstance(message, Message):
            raise TypeError(f"MPI.Message() takes an MPI.Message, not {type(message).__name__}")
        self._source, self._tag, self._data = (PROC_NULL, ANY_TAG, None) if message is None else message._fields()
        self._kind = "null" if message is None else message._kind

    def _fields(self) -> tuple[int, int, bytes | None]:
        return self._source, self._tag, self._data

    @classmethod
    def _taken(cls, source: int, tag: int, data: bytes) -> Message:
        made = cls()
        made._source, made._tag, made._data, made._kind = source, tag, data, "message"
        return made

    @classmethod
    def _no_proc(cls) -> Message:
        made = cls()
        made._kind = "no_proc"
        return made

    def _done(self) -> Done:
        """The message as a complete receive (its status)."""
        if self._kind == "no_proc":
            return Done(PROC_NULL, ANY_TAG)
        return Done(self._source, self._tag, payload_bytes(len(self._data)) if self._data is not None else 0)

    def _take(self, call: str) -> Done:
        """The message, once: this handle becomes MESSAGE_NULL (MESSAGE_NO_PROC stays)."""
        if self._kind == "null":
            raise MPIException(ERR_REQUEST, f"rma.compat: Message.{call}: the message is MPI.MESSAGE_NULL")
        done = self._done()
        done.value = self._data
        if self is not MESSAGE_NO_PROC:  # (the predefined handle stays itself, as in MPI)
            self._kind, self._data = "null", None
        return done

    # ---- probes (as the communicator's) ----

    @classmethod
    def Probe(cls, comm: Any, source: int = -1, tag: int = -1, status: Status | None = None) -> Message:  # noqa: N802
        return comm.Mprobe(source, tag, status)

    @classmethod
    def Iprobe(cls, comm: Any, source: int = -1, tag: int = -1, status: Status | None = None) -> Message | None:  # noqa: N802
        return comm.Improbe(source, tag, status)

    probe = Probe
    iprobe = Iprobe

    # ---- its receive ----

    def Recv(self, buf: Any, status: Status | None = None) -> None:  # noqa: N802
        """Receives the message into buf (any datatype; MPI.ERR_TRUNCATE if it holds more)."""
        runs = result_runs(buf, "Message.Recv") if self._kind == "message" else None
        done = self._take("Recv")
        if runs is not None:
            runs.fill(unstamped(done.value), f"rank {self._source}'s message (tag {self._tag})")
        done.value = None
        _fill(status, done)

    def Irecv(self, buf: Any) -> Request:  # noqa: N802
        status = Status()
        self.Recv(buf, status)
        return Request._running(Done(status.source, status.tag, status.count))

    def recv(self, status: Status | None = None) -> Any:
        done = self._take("recv")
        # (An empty message is None, as mpi4py reads one.)
        done.value = unwrap_object(pickle.loads(done.value)) if done.value else None
        _fill(status, done)
        return done.value

    def irecv(self) -> Request:
        status = Status()
        value = self.recv(status)
        return Request._running(Done(status.source, status.tag, status.count, value))

    def free(self) -> None:
        self._kind, self._data = "null", None

    # ---- handles ----

    @property
    def handle(self) -> int:
        return {"null": 0, "no_proc": 1}.get(self._kind, id(self))

    def toint(self) -> int:
        return -1

    def py2f(self) -> int:
        return -1

    def __bool__(self) -> bool:
        return self._kind != "null"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Message):
            return NotImplemented
        if self._kind == "message" or other._kind == "message":
            return self is other or (self._kind == other._kind and self._data is other._data)
        return self._kind == other._kind

    def __hash__(self) -> int:
        return hash(self._kind)

    def __reduce__(self) -> str | tuple[Any, ...]:
        # As mpi4py's: the predefined handles pickle by name, a copy of them as a copy; a matched
        # message belongs to this process and does not pickle.
        if self is MESSAGE_NULL or self is MESSAGE_NO_PROC:
            return "MESSAGE_NULL" if self is MESSAGE_NULL else "MESSAGE_NO_PROC"
        if self._kind == "message":
            raise ValueError("rma.compat: a matched MPI.Message cannot be pickled: it belongs to this process")
        return (Message, (MESSAGE_NULL if self._kind == "null" else MESSAGE_NO_PROC,))


MESSAGE_NULL = Message()
MESSAGE_NO_PROC = Message._no_proc()

# Integer and Fortran handles: there are none (toint() and py2f() say -1), and a matched
# message lives in its Message object only.
refuse(Message, "f2py fromhandle fromint")
