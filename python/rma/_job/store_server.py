"""Serve the rendezvous store of one job: a tiny key-value store on TCP (see store_protocol.py).

Connections are accepted and their hello awaited by one thread for all (store_gate.py);
only a rank that presented the job secret gets threads of its own.
"""

from __future__ import annotations

import hmac
import queue
import secrets as _secrets
import socket
import threading
import time
from collections.abc import Callable

from ..errors import BootstrapError
from .frames import JSON, MAX_FRAME, Channel
from .settings import link_timeout
from .store_gate import Gate
from .store_protocol import decode_value, encode_value, format_address

__all__ = ["StoreServer"]

# How long close() lets queued frames go out before cutting the connections.
_FLUSH_SECONDS = 1.0


class _Connection:
    """Hold the connection of one admitted rank on the server side.

    Outgoing frames go through a queue drained by a writer thread, so that
    the server never blocks on a client that does not read (e.g. one that is
    stopped or is itself busy sending).
    """

    def __init__(self, channel: Channel, peer: str, rank: int):
        self.channel = channel
        channel.limit = MAX_FRAME
        self.peer = peer
        self.rank = rank
        # Whether the connection ended because its other end went silent (the kernel gave up
        # on it after RMA_LINK_TIMEOUT: a host gone, a link down), not because it closed.
        self.silent = False
        self.said_bye = False
        self._out: queue.SimpleQueue[bytes | threading.Event | None] = queue.SimpleQueue()
        self._writer = threading.Thread(target=self._write_loop, name=f"rma-store-writer-{peer}", daemon=True)
        self._writer.start()

    def send(self, obj: dict) -> None:
        """Queue one frame for sending; never blocks."""
        self._out.put(JSON.pack(obj))

    def finish(self) -> None:
        """Let the writer flush what is queued, then close the socket."""
        self._out.put(None)

    def flush(self, timeout: float) -> None:
        """Wait (up to timeout) until the writer has sent what is queued now."""
        sent = threading.Event()
        self._out.put(sent)
        sent.wait(timeout)

    def abort(self) -> None:
        """Break both directions at once (server shutdown).

        This wakes the reader thread, which then ends the connection through
        finish() as for any other loss.
        """
        self.channel.shutdown()

    def _write_loop(self) -> None:
        broken = False
        while True:
            frame = self._out.get()
            if frame is None:
                break
            if isinstance(frame, threading.Event):
                frame.set()
                continue
            if broken:
                continue
            try:
                self.channel.send_packed(frame)
            except OSError:
                # The peer went away; the reader thread notices it too and
                # sends the sentinel.  Only then is the socket closed, so
                # that it is never closed under the reader's feet.
                broken = True
        self.channel.shutdown()
        self.channel.close()


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
        silent_after = link_timeout()
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
                f"rma: cannot listen for the rendezvous store on {format_address(host, port)}: {exc.strerror or exc}"
            ) from None
        bound_host, bound_port = self._listener.getsockname()[:2]
        self.address: str = format_address(bound_host, bound_port)
        # A wildcard address is not something to connect to: ranks are told this machine's name.
        reachable_host = socket.gethostname() if host in ("", "0.0.0.0", "::") else host
        #: The address to give ranks (RMA_STORE).
        self.reachable_address: str = format_address(reachable_host, bound_port)

        self._lock = threading.Lock()
        self._data: dict[str, bytes] = {}
        self._waiters: dict[str, list[_Waiter]] = {}
        self._by_rank: dict[int, _Connection] = {}
        self._conns: set[_Connection] = set()
        self._finished: set[int] = set()
        self._dead: set[int] = set()
        self._silent: set[int] = set()  # of _dead: those whose connection went silent
        # _dead in the order the store learned of them, each before any rank was told: a rank
        # that fails because another died (PeerError) comes after it here, whenever its own
        # process ends. rmarun's summary names the first.
        self._dead_in_order: list[int] = []
        self._closed = False
        self._started = False
        self._gate = Gate(self._listener, self._admit, silent_after)

    # -- public API --------------------------------------------------------

    def start(self) -> None:
        """Start serving in daemon threads."""
        with self._lock:
            if self._started or self._closed:
                return
            self._started = True
        self._gate.start()

    def close(self) -> None:
        """Stop serving and close every connection; calling it again does nothing."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            conns = list(self._conns)
            self._conns.clear()
            self._waiters.clear()
        self._gate.close()
        # A death notice queued just before (rank 0 of a PMIx job ending on a PeerError, say)
        # still goes out: cut now, it would reach a rank as the store's own death instead.
        deadline = time.monotonic() + _FLUSH_SECONDS
        for conn in conns:
            conn.flush(max(0.0, deadline - time.monotonic()))
        for conn in conns:
            conn.abort()
        self._listener.close()

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

    def deaths(self) -> list[tuple[int, bool]]:
        """Return the ranks whose connection ended without "bye", in the order the store learned
        it (before telling the others), each with whether it went silent (RMA_LINK_TIMEOUT)
        rather than closed."""
        with self._lock:
            return [(rank, rank in self._silent) for rank in self._dead_in_order]

    def __enter__(self) -> StoreServer:
        self.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    # -- internals ---------------------------------------------------------

    def _admit(self, channel: Channel, hello: dict, peer: str) -> str | None:
        """Judge a hello (on the gate's thread): start serving the rank, or say why not."""
        secret = hello.get("secret")
        rank = hello.get("rank")
        if hello.get("op") != "hello" or not isinstance(secret, str):
            return "not an rma rendezvous client (bad hello)"
        if not hmac.compare_digest(secret.encode("utf-8"), self.secret.encode("utf-8")):
            return "wrong job secret (RMA_SECRET)"
        if isinstance(rank, bool) or not isinstance(rank, int) or not 0 <= rank < self.size:
            return f"rank out of range: the job has {self.size} ranks (0..{self.size - 1})"
        with self._lock:
            if self._closed:
                return "the store is shutting down"
            if rank in self._by_rank:
                return "another process already joined as this rank (duplicate RMA_RANK)"
            if rank in self._finished or rank in self._dead:
                return "this rank already left the job"
            conn = _Connection(channel, peer, rank)
            self._by_rank[rank] = conn
            self._conns.add(conn)
            already_dead = sorted(self._dead)
            conn.send({"ok": True, "size": self.size})
            # A late joiner must learn about deaths it missed, or it could
            # wait forever for a key the dead rank will never put.
            for dead_rank in already_dead:
                conn.send({"event": "dead", "rank": dead_rank, "silent": dead_rank in self._silent})
        threading.Thread(target=self._serve_connection, args=(conn,), name="rma-store-conn", daemon=True).start()
        return None

    def _serve_connection(self, conn: _Connection) -> None:
        try:
            self._read_requests(conn)
        except TimeoutError:
            conn.silent = True  # the keepalive probes went unanswered (store_protocol.watch_link)
        except Exception:  # noqa: BLE001
            # A broken or malformed connection, whatever the error: treat
            # it like a closed one rather than kill the thread noisily.
            pass
        finally:
            self._connection_ended(conn)

    def _read_requests(self, conn: _Connection) -> None:
        while True:
            msg = conn.channel.receive()
            if msg is None:
                return
            op = msg.get("op")
            req_id = msg.get("id")
            if op == "put":
                self._handle_put(conn, req_id, msg["key"], decode_value(msg["value"]))
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
            replies = [(w, [encode_value(self._data[k]) for k in w.keys]) for w in ready]
        for waiter, values in replies:
            waiter.conn.send({"id": waiter.req_id, "ok": True, "values": values})
        conn.send({"id": req_id, "ok": True})

    def _handle_get(self, conn: _Connection, req_id: object, keys: list[str]) -> None:
        if not all(isinstance(k, str) for k in keys):
            raise TypeError("keys must be strings")
        with self._lock:
            missing = {k for k in keys if k not in self._data}
            if not missing:
                values = [encode_value(self._data[k]) for k in keys]
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
                    self._dead_in_order.append(rank)
                    if conn.silent:
                        self._silent.add(rank)
                    notify = list(self._by_rank.values())
        for other in notify:
            other.send({"event": "dead", "rank": rank, "silent": conn.silent})
        conn.finish()
        if report:
            self._report_exit(rank, False)
