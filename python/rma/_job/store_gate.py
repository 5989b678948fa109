"""Accept the store's connections and wait for their hello, with one thread for all of them.

A connection costs no thread until it has proven it knows the job secret, so idle or slow
connections (anyone who can reach the port may open them) cannot starve the store:

* a connection has HELLO_DEADLINE seconds to send its hello, then it is closed;
* at most MAX_WAITING connections wait for their hello; a new one beyond that closes the
  oldest.  The oldest, not the newest: a real rank sends its hello as soon as it is
  connected, so it is never the oldest for long, while refusing newcomers would let whoever
  holds MAX_WAITING idle connections keep every rank out;
* when the process is out of file descriptors (EMFILE, ENFILE) the oldest waiting
  connections are closed, as if MAX_WAITING were lower, and accepting pauses for
  ACCEPT_BACKOFF seconds instead of retrying at once (connections wait in the listen backlog
  meanwhile).  Nothing is logged per connection or per attempt.

The hello itself is judged by the store (``admit``), on this thread.
"""

from __future__ import annotations

import itertools
import selectors
import socket
import threading
import time
from collections.abc import Callable

from .frames import JSON, Channel
from .store_protocol import watch_link

__all__ = ["Gate", "HELLO_DEADLINE", "MAX_WAITING", "ACCEPT_BACKOFF"]

#: Seconds a new connection has to send its hello.
HELLO_DEADLINE = 5.0
#: Most connections waiting for their hello at once; beyond it the oldest is closed.
MAX_WAITING = 1024
#: Seconds accepting pauses when the process is out of file descriptors (or any other error).
ACCEPT_BACKOFF = 0.1
# Largest hello accepted: a stray connection cannot make the store allocate much memory.
_MAX_HELLO_FRAME = 64 * 1024
# Most connections accepted in a row before reading the ones waiting (who may hold a rank).
_ACCEPT_BATCH = 64


class _Waiting:
    """One connection that has not sent its hello yet."""

    __slots__ = ("channel", "peer", "deadline")

    def __init__(self, sock: socket.socket, peer: str, deadline: float):
        self.channel = Channel(sock, JSON, limit=_MAX_HELLO_FRAME)
        self.peer = peer
        self.deadline = deadline


class Gate:
    """Accept connections on `listener` and hand each one's hello to `admit`.

    ``admit(channel, hello, peer)`` runs on the gate's thread and must not block.  It
    returns None when it takes the connection over (the socket is then in blocking mode),
    or the reason for refusing it, which the gate sends to the client before closing.
    """

    def __init__(self, listener: socket.socket, admit: Callable[[Channel, dict, str], str | None], silent_after: float):
        """silent_after: seconds after which a connection whose other end stopped answering
        counts as closed (RMA_LINK_TIMEOUT, store_protocol.watch_link)."""
        self._listener = listener
        self._admit = admit
        self._silent_after = silent_after
        self._waiting: dict[socket.socket, _Waiting] = {}  # in the order accepted: oldest first
        self._paused_until: float | None = None
        self._selector = selectors.DefaultSelector()
        # A socketpair wakes the loop out of select() on close(); closing a listening socket
        # does not reliably wake it on Linux.
        self._wake_r, self._wake_w = socket.socketpair()
        self._thread = threading.Thread(target=self._run, name="rma-store-gate", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        """Stop accepting and close the connections still waiting for their hello."""
        try:
            self._wake_w.send(b"x")
        except OSError:
            pass
        if self._thread.is_alive():
            self._thread.join(timeout=5.0)
        self._wake_r.close()
        self._wake_w.close()

    # -- the loop ----------------------------------------------------------

    def _run(self) -> None:
        # Non-blocking, so that a connection reset between select() and accept() cannot
        # block the loop (and with it close()).
        self._listener.setblocking(False)
        self._selector.register(self._listener, selectors.EVENT_READ)
        self._selector.register(self._wake_r, selectors.EVENT_READ)
        try:
            while True:
                now = time.monotonic()
                self._expire(now)
                if self._paused_until is not None and now >= self._paused_until:
                    self._paused_until = None
                    self._selector.register(self._listener, selectors.EVENT_READ)
                for key, _ in self._selector.select(self._timeout(now)):
                    if key.fileobj is self._wake_r:
                        return
                    if key.fileobj is self._listener:
                        self._accept()
                    elif key.fileobj in self._waiting:  # not dropped by _accept() just now
                        self._read_hello(key.data)
        finally:
            for waiting in list(self._waiting.values()):
                self._drop(waiting)
            self._selector.close()

    def _timeout(self, now: float) -> float | None:
        """Return how long select() may sleep: until the next deadline or the end of a pause."""
        wake = []
        if self._waiting:  # the oldest expires first
            wake.append(next(iter(self._waiting.values())).deadline)
        if self._paused_until is not None:
            wake.append(self._paused_until)
        return max(min(wake) - now, 0.0) if wake else None

    def _expire(self, now: float) -> None:
        while self._waiting:
            oldest = next(iter(self._waiting.values()))
            if oldest.deadline > now:
                return
            self._drop(oldest)

    def _accept(self) -> None:
        for _ in range(_ACCEPT_BATCH):
            try:
                sock, peer = self._listener.accept()
            except (BlockingIOError, InterruptedError, ConnectionAbortedError):
                return  # nothing more to accept, or the client gave up in between
            except OSError:
                # Out of file descriptors (EMFILE, ENFILE) or memory: the connection stays in
                # the backlog and the listener stays readable, so retrying now would spin.
                # Make room by closing the oldest waiting, and retry a little later.
                for waiting in list(itertools.islice(self._waiting.values(), _ACCEPT_BATCH)):
                    self._drop(waiting)
                self._selector.unregister(self._listener)
                self._paused_until = time.monotonic() + ACCEPT_BACKOFF
                return
            if len(self._waiting) >= MAX_WAITING:
                self._drop(next(iter(self._waiting.values())))
            sock.setblocking(False)
            watch_link(sock, self._silent_after)  # a rank whose host went silent counts as dead
            waiting = _Waiting(sock, f"{peer[0]}:{peer[1]}", time.monotonic() + HELLO_DEADLINE)
            self._waiting[sock] = waiting
            self._selector.register(sock, selectors.EVENT_READ, waiting)

    def _read_hello(self, waiting: _Waiting) -> None:
        channel = waiting.channel
        try:
            more = channel.fill()
            hello = channel.take()
        except (BlockingIOError, InterruptedError):
            return
        except Exception:  # noqa: BLE001 - reset, oversized or malformed: not a client of ours
            self._drop(waiting)
            return
        if hello is None:
            if not more:
                self._drop(waiting)
            return
        self._forget(waiting)
        channel.sock.setblocking(True)
        try:
            reason = self._admit(channel, hello, waiting.peer)
        except Exception as exc:  # noqa: BLE001 - e.g. no thread to spare: refuse this one, keep serving
            reason = f"the store cannot take the connection: {exc}"
        if reason is not None:
            self._refuse(channel, reason)

    # -- ending connections --------------------------------------------------

    def _forget(self, waiting: _Waiting) -> None:
        sock = waiting.channel.sock
        del self._waiting[sock]
        self._selector.unregister(sock)

    def _drop(self, waiting: _Waiting) -> None:
        self._forget(waiting)
        waiting.channel.close()

    @staticmethod
    def _refuse(channel: Channel, reason: str) -> None:
        """Tell the client why it is refused (without ever blocking), then close."""
        channel.sock.setblocking(False)
        try:
            channel.sock.send(JSON.pack({"ok": False, "error": reason}))
        except OSError:
            pass  # the client is gone, or not reading: it only misses the reason
        channel.shutdown()
        channel.close()
