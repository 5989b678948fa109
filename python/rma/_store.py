"""Run the rendezvous store of a job: a tiny key-value store on TCP.

The launcher (``rmarun``) runs one :class:`StoreServer` per job.  Every rank
connects to it with a :class:`StoreClient`, publishes its endpoint address
with :meth:`StoreClient.put` and reads the others' with
:meth:`StoreClient.get_many`.  Because every rank keeps its connection open
for its whole life, the server also learns when a rank dies (its connection
closes without a prior "bye") and tells every other rank.

Wire protocol (both directions): frames of a 4-byte big-endian length
followed by that many bytes of UTF-8 JSON holding one object.  Byte values
travel base64-encoded.

* client -> server, first frame: ``{"op": "hello", "secret": s, "rank": r}``;
  the server answers ``{"ok": true, "size": n}`` or
  ``{"ok": false, "error": reason}`` and then closes the connection.
* client -> server requests carry an ``"id"`` which the reply echoes:
  ``put`` (``key``, ``value``), ``get`` (``keys``: the reply comes when all of
  them exist, with ``values``), ``bye`` (this rank finished normally).
* server -> client events carry ``"event"`` instead of ``"id"``:
  ``{"event": "dead", "rank": r}`` when rank r's connection closed without
  "bye".  A client that joins late is told about ranks already dead.
"""

from __future__ import annotations

import base64
import hmac
import itertools
import json
import queue
import secrets as _secrets
import selectors
import socket
import struct
import threading
import time
from typing import Callable

from .errors import BootstrapError, PeerError, RMATimeoutError

__all__ = ["StoreServer", "StoreClient", "MAX_VALUE_SIZE", "parse_address"]

#: Largest value accepted by :meth:`StoreClient.put`.
MAX_VALUE_SIZE = 16 * 1024 * 1024

# Frames may hold several base64-encoded values (a get_many reply), so the
# frame limit is well above MAX_VALUE_SIZE; it only guards against garbage.
_MAX_FRAME = 1 << 30
# Before a peer has proven it knows the secret we accept only a small frame,
# so that a stray connection cannot make the server allocate much memory.
_MAX_HELLO_FRAME = 64 * 1024
# How long the server waits for the hello of a new connection.
_HELLO_TIMEOUT = 30.0
# How long close(clean=True) waits for the server to acknowledge "bye".
_BYE_TIMEOUT = 5.0
# How long a client with no timeout (timeout=None) tries to join: the other
# calls may wait forever, but a wrong RMA_STORE must still be reported.
_JOIN_TIMEOUT = 60.0

_HEADER = struct.Struct(">I")


# --------------------------------------------------------------------------
# framing helpers


def _encode_frame(obj: dict) -> bytes:
    """Encode one message as a length-prefixed JSON frame."""
    payload = json.dumps(obj, separators=(",", ":")).encode("utf-8")
    return _HEADER.pack(len(payload)) + payload


def _recv_exact(sock: socket.socket, n: int) -> bytes | None:
    """Read exactly n bytes; return None on a clean EOF before the first byte."""
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(min(n - len(buf), 1 << 20))
        if not chunk:
            if buf:
                raise ConnectionError("connection closed in the middle of a frame")
            return None
        buf += chunk
    return bytes(buf)


def _recv_frame(sock: socket.socket, limit: int = _MAX_FRAME) -> dict | None:
    """Read one frame and decode it; return None on EOF at a frame boundary."""
    header = _recv_exact(sock, _HEADER.size)
    if header is None:
        return None
    (length,) = _HEADER.unpack(header)
    if length > limit:
        raise ConnectionError(f"frame of {length} bytes exceeds the limit of {limit}")
    payload = _recv_exact(sock, length) if length else b""
    if payload is None:
        raise ConnectionError("connection closed in the middle of a frame")
    obj = json.loads(payload.decode("utf-8"))
    if not isinstance(obj, dict):
        raise ConnectionError("malformed frame: not a JSON object")
    return obj


def _b64(value: bytes) -> str:
    return base64.b64encode(value).decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.b64decode(text.encode("ascii"), validate=True)


def _describe_keys(keys: list[str], limit: int = 4) -> str:
    """Name the first few keys of a request for an error message."""
    shown = ", ".join(repr(k) for k in keys[:limit])
    return shown if len(keys) <= limit else f"{shown} and {len(keys) - limit} more keys"


def parse_address(address: str) -> tuple[str, int]:
    """Split "host:port" (or "[v6addr]:port") into (host, port); raise ValueError if malformed."""
    host, sep, port_text = address.strip().rpartition(":")
    if not sep or not host or not port_text.isdigit():
        raise ValueError(f"malformed store address {address!r}: expected host:port")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    port = int(port_text)
    if not 0 < port < 65536:
        raise ValueError(f"malformed store address {address!r}: port out of range")
    return host, port


def _format_address(host: str, port: int) -> str:
    """Join host and port, bracketing IPv6 literals so that parse_address round-trips."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


# --------------------------------------------------------------------------
# server


class _Connection:
    """Hold one client connection on the server side.

    Outgoing frames go through a queue drained by a writer thread, so that
    the server never blocks on a client that does not read (e.g. one that is
    stopped or is itself busy sending).
    """

    def __init__(self, sock: socket.socket, peer: str):
        self.sock = sock
        self.peer = peer
        self.rank: int | None = None
        self.said_bye = False
        self._out: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        self._writer = threading.Thread(
            target=self._write_loop, name=f"rma-store-writer-{peer}", daemon=True
        )
        self._writer.start()

    def send(self, obj: dict) -> None:
        """Queue one frame for sending; never blocks."""
        self._out.put(_encode_frame(obj))

    def finish(self) -> None:
        """Let the writer flush what is queued, then close the socket."""
        self._out.put(None)

    def abort(self) -> None:
        """Break both directions at once (server shutdown).

        This wakes the reader thread, which then ends the connection through
        finish() as for any other loss.
        """
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _write_loop(self) -> None:
        broken = False
        while True:
            frame = self._out.get()
            if frame is None:
                break
            if broken:
                continue
            try:
                self.sock.sendall(frame)
            except OSError:
                # The peer went away; the reader thread notices it too and
                # sends the sentinel.  Only then is the socket closed, so
                # that it is never closed under the reader's feet.
                broken = True
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()


class _Waiter:
    """Track one pending get: which keys are still missing for which request."""

    __slots__ = ("conn", "req_id", "keys", "missing")

    def __init__(self, conn: _Connection, req_id: object, keys: list[str], missing: set[str]):
        self.conn = conn
        self.req_id = req_id
        self.keys = keys
        self.missing = missing


class StoreServer:
    """Serve the rendezvous store of one job of `size` ranks.

    `secret` is the job secret every client must present (a random one is
    made when None).  `on_rank_exit(rank, clean)` is called, from a server
    thread, when a rank's connection ends: clean is True when the rank said
    "bye" first, False when it died.  It must not block for long.
    """

    def __init__(
        self,
        size: int,
        *,
        secret: str | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        on_rank_exit: Callable[[int, bool], None] | None = None,
    ):
        if size < 1:
            raise ValueError(f"size must be at least 1, not {size}")
        self.size = size
        self.secret = secret if secret is not None else _secrets.token_hex(16)
        self._on_rank_exit = on_rank_exit

        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self._listener = socket.socket(family, socket.SOCK_STREAM)
        try:
            # Let a fixed --store-port be reused right after a previous job.
            self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self._listener.bind((host, port))
            self._listener.listen(max(128, size))
        except OSError as exc:
            self._listener.close()
            raise BootstrapError(
                f"rma: cannot listen for the rendezvous store on {_format_address(host, port)}: "
                f"{exc.strerror or exc}"
            ) from None
        bound_host, bound_port = self._listener.getsockname()[:2]
        self.address: str = _format_address(bound_host, bound_port)

        self._lock = threading.Lock()
        self._data: dict[str, bytes] = {}
        self._waiters: dict[str, list[_Waiter]] = {}
        self._by_rank: dict[int, _Connection] = {}
        self._conns: set[_Connection] = set()
        self._finished: set[int] = set()
        self._dead: set[int] = set()
        self._closed = False
        self._started = False
        # A socketpair wakes the accept loop out of select() on close();
        # closing a listening socket does not reliably wake accept() on Linux.
        self._wake_r, self._wake_w = socket.socketpair()
        self._accept_thread = threading.Thread(
            target=self._accept_loop, name="rma-store-accept", daemon=True
        )

    # -- public API --------------------------------------------------------

    def start(self) -> None:
        """Start serving in daemon threads."""
        with self._lock:
            if self._started or self._closed:
                return
            self._started = True
        self._accept_thread.start()

    def close(self) -> None:
        """Stop serving and close every connection; calling it again does nothing."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            conns = list(self._conns)
            self._conns.clear()
            self._waiters.clear()
        try:
            self._wake_w.send(b"x")
        except OSError:
            pass
        if self._accept_thread.is_alive():
            self._accept_thread.join(timeout=5.0)
        for conn in conns:
            conn.abort()
        self._listener.close()
        self._wake_r.close()
        self._wake_w.close()

    def ranks_connected(self) -> set[int]:
        """Return the ranks connected now that have not said "bye"."""
        with self._lock:
            return set(self._by_rank)

    def ranks_finished(self) -> set[int]:
        """Return the ranks that said "bye" before closing their connection."""
        with self._lock:
            return set(self._finished)

    def ranks_dead(self) -> set[int]:
        """Return the ranks whose connection closed without "bye"."""
        with self._lock:
            return set(self._dead)

    def __enter__(self) -> "StoreServer":
        self.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    # -- internals ---------------------------------------------------------

    def _accept_loop(self) -> None:
        # Non-blocking, so that a connection reset between select() and
        # accept() cannot block the loop (and with it close()).
        self._listener.setblocking(False)
        sel = selectors.DefaultSelector()
        sel.register(self._listener, selectors.EVENT_READ)
        sel.register(self._wake_r, selectors.EVENT_READ)
        try:
            while True:
                for key, _ in sel.select():
                    if key.fileobj is self._wake_r:
                        return
                    try:
                        sock, peer = self._listener.accept()
                    except OSError:  # e.g. the client gave up in between
                        continue
                    sock.setblocking(True)
                    with self._lock:
                        if self._closed:
                            sock.close()
                            return
                    threading.Thread(
                        target=self._serve_connection,
                        args=(sock, f"{peer[0]}:{peer[1]}"),
                        name="rma-store-conn",
                        daemon=True,
                    ).start()
        finally:
            sel.close()

    def _serve_connection(self, sock: socket.socket, peer: str) -> None:
        conn = _Connection(sock, peer)
        try:
            if self._handshake(conn):
                self._read_requests(conn)
        except Exception:  # noqa: BLE001
            # A broken or malformed connection, whatever the error: treat
            # it like a closed one rather than kill the thread noisily.
            pass
        finally:
            self._connection_ended(conn)

    def _handshake(self, conn: _Connection) -> bool:
        """Check the hello frame; register the rank and return True when accepted."""
        conn.sock.settimeout(_HELLO_TIMEOUT)
        try:
            hello = _recv_frame(conn.sock, limit=_MAX_HELLO_FRAME)
        except (OSError, ValueError):
            return False
        conn.sock.settimeout(None)
        if hello is None:
            return False

        def refuse(reason: str) -> bool:
            conn.send({"ok": False, "error": reason})
            return False

        secret = hello.get("secret")
        rank = hello.get("rank")
        if hello.get("op") != "hello" or not isinstance(secret, str):
            return refuse("not an rma rendezvous client (bad hello)")
        if not hmac.compare_digest(secret.encode("utf-8"), self.secret.encode("utf-8")):
            return refuse("wrong job secret (RMA_SECRET)")
        if isinstance(rank, bool) or not isinstance(rank, int) or not 0 <= rank < self.size:
            return refuse(f"rank out of range: the job has {self.size} ranks (0..{self.size - 1})")
        with self._lock:
            if self._closed:
                return refuse("the store is shutting down")
            if rank in self._by_rank:
                return refuse("another process already joined as this rank (duplicate RMA_RANK)")
            if rank in self._finished or rank in self._dead:
                return refuse("this rank already left the job")
            conn.rank = rank
            self._by_rank[rank] = conn
            self._conns.add(conn)
            already_dead = sorted(self._dead)
            conn.send({"ok": True, "size": self.size})
            # A late joiner must learn about deaths it missed, or it could
            # wait forever for a key the dead rank will never put.
            for dead_rank in already_dead:
                conn.send({"event": "dead", "rank": dead_rank})
        return True

    def _read_requests(self, conn: _Connection) -> None:
        while True:
            msg = _recv_frame(conn.sock)
            if msg is None:
                return
            op = msg.get("op")
            req_id = msg.get("id")
            if op == "put":
                self._handle_put(conn, req_id, msg["key"], _unb64(msg["value"]))
            elif op == "get":
                self._handle_get(conn, req_id, list(msg["keys"]))
            elif op == "bye":
                self._handle_bye(conn, req_id)
            else:
                conn.send({"id": req_id, "ok": False, "error": f"unknown op {op!r}"})

    def _handle_put(self, conn: _Connection, req_id: object, key: str, value: bytes) -> None:
        if not isinstance(key, str):
            raise TypeError("key must be a string")
        ready: list[_Waiter] = []
        with self._lock:
            self._data[key] = value
            for waiter in self._waiters.pop(key, ()):
                waiter.missing.discard(key)
                if not waiter.missing:
                    ready.append(waiter)
            replies = [(w, [_b64(self._data[k]) for k in w.keys]) for w in ready]
        for waiter, values in replies:
            waiter.conn.send({"id": waiter.req_id, "ok": True, "values": values})
        conn.send({"id": req_id, "ok": True})

    def _handle_get(self, conn: _Connection, req_id: object, keys: list[str]) -> None:
        if not all(isinstance(k, str) for k in keys):
            raise TypeError("keys must be strings")
        with self._lock:
            missing = {k for k in keys if k not in self._data}
            if not missing:
                values = [_b64(self._data[k]) for k in keys]
            else:
                waiter = _Waiter(conn, req_id, keys, missing)
                for key in missing:
                    self._waiters.setdefault(key, []).append(waiter)
                return
        conn.send({"id": req_id, "ok": True, "values": values})

    def _handle_bye(self, conn: _Connection, req_id: object) -> None:
        # The rank counts as finished from now on, not when its connection
        # closes later: the server may be closed in between.
        rank = conn.rank
        with self._lock:
            report = not conn.said_bye and self._by_rank.get(rank) is conn
            conn.said_bye = True
            if report:
                del self._by_rank[rank]
                self._finished.add(rank)
        conn.send({"id": req_id, "ok": True})
        if report:
            self._report_exit(rank, True)

    def _report_exit(self, rank: int, clean: bool) -> None:
        if self._on_rank_exit is not None:
            try:
                self._on_rank_exit(rank, clean)
            except Exception:  # noqa: BLE001 - a callback bug must not kill the server
                pass

    def _connection_ended(self, conn: _Connection) -> None:
        """Classify the end of a connection (finished or dead) and tell the others."""
        rank = conn.rank
        notify: list[_Connection] = []
        report = False
        with self._lock:
            self._conns.discard(conn)
            # Drop this connection's pending gets: nobody will read the replies.
            for key in list(self._waiters):
                kept = [w for w in self._waiters[key] if w.conn is not conn]
                if kept:
                    self._waiters[key] = kept
                else:
                    del self._waiters[key]
            # After "bye" the rank is no longer in _by_rank: it finished.
            if rank is not None and self._by_rank.get(rank) is conn:
                del self._by_rank[rank]
                # Connections cut by close() are not deaths: the store went
                # away, not the rank.
                if not self._closed:
                    report = True
                    self._dead.add(rank)
                    notify = list(self._by_rank.values())
        for other in notify:
            other.send({"event": "dead", "rank": rank})
        conn.finish()
        if report:
            self._report_exit(rank, False)


# --------------------------------------------------------------------------
# client


class _Pending:
    """Hold the slot one request's reply is delivered into."""

    __slots__ = ("event", "reply")

    def __init__(self) -> None:
        self.event = threading.Event()
        self.reply: dict | None = None


class StoreClient:
    """Join the rendezvous store of a job as one rank.

    Connects at once (retrying while the store is not yet listening, up to
    `timeout` seconds) and raises BootstrapError when the store is
    unreachable or refuses this rank.  `timeout` is also the deadline of
    put() and the default one of get() and get_many(); None means no
    deadline for those (joining still gives up after 60 s).  Requests may
    come from several threads; one reader thread receives every frame and
    hands replies to the waiting request and dead notices to the
    on_peer_dead callbacks.
    """

    def __init__(self, address: str, secret: str, rank: int, *, timeout: float | None = 60.0):
        self.address = address
        self.rank = rank
        self.timeout = timeout
        self.size: int | None = None
        self._send_lock = threading.Lock()
        self._state_lock = threading.Lock()
        self._pending: dict[int, _Pending] = {}
        self._ids = itertools.count(1)
        self._callbacks: list[Callable[[int], None]] = []
        self._dead: list[int] = []  # in the order announced; -1 = store lost
        self._lost = False
        self._closing = False
        self._closed = False

        try:
            host, port = parse_address(address)
        except ValueError as exc:
            raise BootstrapError(f"rma: {exc} (RMA_STORE)") from None
        join_timeout = _JOIN_TIMEOUT if timeout is None else timeout
        self._sock = self._connect(host, port, join_timeout)
        try:
            self._hello(secret, rank, join_timeout)
        except BaseException:
            self._sock.close()
            raise
        self._reader = threading.Thread(
            target=self._read_loop, name=f"rma-store-client-{rank}", daemon=True
        )
        self._reader.start()

    # -- connection set-up -------------------------------------------------

    def _connect(self, host: str, port: int, timeout: float) -> socket.socket:
        """Connect to the store, retrying on refusal until the deadline passes."""
        deadline = time.monotonic() + timeout
        delay = 0.01
        while True:
            remaining = deadline - time.monotonic()
            try:
                sock = socket.create_connection((host, port), timeout=max(remaining, 0.1))
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                return sock
            except OSError as exc:
                reason = exc.strerror or str(exc)
                # A store started a moment after the ranks is normal under a
                # batch system; keep trying with a short, growing delay.
                if remaining <= 0 or isinstance(exc, socket.gaierror):
                    raise BootstrapError(
                        f"rma: cannot reach the rendezvous store at {self.address} "
                        f"(RMA_STORE) as rank {self.rank}: {reason}"
                    ) from None
                time.sleep(min(delay, max(remaining, 0)))
                delay = min(delay * 2, 0.5)

    def _hello(self, secret: str, rank: int, timeout: float) -> None:
        """Send the hello frame and raise BootstrapError unless the store accepts it."""
        self._sock.settimeout(timeout)
        try:
            self._sock.sendall(_encode_frame({"op": "hello", "secret": secret, "rank": rank}))
            reply = _recv_frame(self._sock)
        except (OSError, ValueError) as exc:
            raise BootstrapError(
                f"rma: the rendezvous store at {self.address} did not answer rank {rank}: {exc}"
            ) from None
        finally:
            self._sock.settimeout(None)
        if reply is None:
            raise BootstrapError(
                f"rma: the rendezvous store at {self.address} closed the connection of rank {rank}"
            )
        if not reply.get("ok"):
            raise BootstrapError(
                f"rma: the rendezvous store at {self.address} refused rank {rank}: "
                f"{reply.get('error', 'no reason given')}"
            )
        self.size = reply.get("size")

    # -- public API --------------------------------------------------------

    def put(self, key: str, value: bytes) -> None:
        """Store `value` under `key`, replacing any previous value."""
        value = bytes(value)
        if len(value) > MAX_VALUE_SIZE:
            raise ValueError(f"store values are limited to {MAX_VALUE_SIZE} bytes, not {len(value)}")
        self._request({"op": "put", "key": str(key), "value": _b64(value)}, self.timeout)

    def get(self, key: str, timeout: float | None = None) -> bytes:
        """Return the value of `key`, waiting until some rank puts it."""
        return self.get_many([key], timeout)[0]

    def get_many(self, keys: list[str], timeout: float | None = None) -> list[bytes]:
        """Return the values of all `keys` in one round trip, waiting until all exist.

        Raises RMATimeoutError when they do not all exist within `timeout`
        seconds (None means the client's default).
        """
        keys = [str(k) for k in keys]
        if not keys:
            return []
        reply = self._request({"op": "get", "keys": keys}, self.timeout if timeout is None else timeout)
        return [_unb64(v) for v in reply["values"]]

    def on_peer_dead(self, callback: Callable[[int], None]) -> None:
        """Call `callback(rank)` whenever the store announces that a rank died.

        `callback(-1)` means the connection to the store was lost (the
        launcher is gone).  Deaths announced before the registration are
        replayed at once.  The callback runs on the client's reader thread:
        it must return quickly and must not call this client's blocking
        methods.
        """
        with self._state_lock:
            self._callbacks.append(callback)
            known = list(self._dead)
        for rank in known:
            self._call(callback, rank)

    def dead_ranks(self) -> list[int]:
        """Return the ranks announced dead so far, in order (-1 = store lost)."""
        with self._state_lock:
            return list(self._dead)

    def close(self, clean: bool = True) -> None:
        """Leave the store; with clean=True first tell it this rank finished normally.

        Calling it again does nothing.
        """
        with self._state_lock:
            if self._closed:
                return
            self._closed = True
            lost = self._lost
        if clean and not lost:
            try:
                self._request({"op": "bye"}, _BYE_TIMEOUT)
            except (RMATimeoutError, PeerError, OSError):
                # The store is gone or stuck: nothing more to tell it.
                pass
        with self._state_lock:
            self._closing = True
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._sock.close()
        if self._reader is not threading.current_thread():
            self._reader.join(timeout=5.0)

    def __enter__(self) -> "StoreClient":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.close(clean=exc_type is None)

    # -- internals ---------------------------------------------------------

    def _request(self, msg: dict, timeout: float | None) -> dict:
        """Send one request and wait for its reply."""
        req_id = next(self._ids)
        slot = _Pending()
        with self._state_lock:
            if self._lost:
                raise self._lost_error()
            if self._closing:
                raise PeerError("rma: the rendezvous store client is closed")
            self._pending[req_id] = slot
        msg["id"] = req_id
        frame = _encode_frame(msg)
        try:
            try:
                # One lock keeps frames of concurrent requests from interleaving.
                with self._send_lock:
                    self._sock.sendall(frame)
            except OSError:
                raise self._lost_error() from None
            # (RMATimeoutError is an OSError too, hence the separate try above.)
            if not slot.event.wait(timeout):
                if msg["op"] == "get":
                    raise RMATimeoutError(
                        f"rma: rank {self.rank}: the rendezvous store had no value for "
                        f"{_describe_keys(msg['keys'])} within {timeout:g} s"
                    )
                raise RMATimeoutError(
                    f"rma: rank {self.rank}: the rendezvous store did not answer "
                    f"{msg['op']} within {timeout:g} s"
                )
        finally:
            with self._state_lock:
                self._pending.pop(req_id, None)
        reply = slot.reply
        if reply is None:  # woken because the connection ended
            with self._state_lock:
                closing = self._closing
            if closing:
                raise PeerError(f"rma: rank {self.rank}: the rendezvous store client was closed")
            raise self._lost_error()
        if not reply.get("ok"):
            raise PeerError(f"rma: the rendezvous store rejected {msg['op']}: {reply.get('error')}")
        return reply

    def _lost_error(self) -> PeerError:
        return PeerError(
            f"rma: rank {self.rank} lost its connection to the rendezvous store at "
            f"{self.address} (is the launcher gone?)"
        )

    def _read_loop(self) -> None:
        try:
            while True:
                msg = _recv_frame(self._sock)
                if msg is None:
                    break
                if "event" in msg:
                    if msg["event"] == "dead":
                        self._announce(int(msg["rank"]))
                    continue
                with self._state_lock:
                    slot = self._pending.get(msg.get("id"))
                # A reply to a request that already timed out is dropped.
                if slot is not None:
                    slot.reply = msg
                    slot.event.set()
        except (OSError, ValueError, KeyError, TypeError):
            pass
        with self._state_lock:
            expected = self._closing
            self._lost = True
            waiting = list(self._pending.values())
        # Wake every waiting request: its reply can no longer arrive.
        for slot in waiting:
            slot.event.set()
        if not expected:
            self._announce(-1)

    def _announce(self, rank: int) -> None:
        with self._state_lock:
            if rank in self._dead:
                return
            self._dead.append(rank)
            callbacks = list(self._callbacks)
        for callback in callbacks:
            self._call(callback, rank)

    @staticmethod
    def _call(callback: Callable[[int], None], rank: int) -> None:
        try:
            callback(rank)
        except Exception:  # noqa: BLE001 - a callback bug must not kill the reader
            import traceback

            traceback.print_exc()
