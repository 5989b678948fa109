"""Join the rendezvous store of a job as one rank (see store_protocol.py)."""

from __future__ import annotations

import itertools
import math
import socket
import sys
import threading
import time
from collections.abc import Callable

from ..errors import BootstrapError, PeerError, RMATimeoutError
from .frames import JSON, Channel
from .settings import link_timeout
from .store_protocol import MAX_VALUE_SIZE, decode_value, encode_value, parse_address, watch_link

__all__ = ["StoreClient"]

# How long close(clean=True) waits for the server to acknowledge "bye".
_BYE_TIMEOUT = 5.0
# How long a client with no timeout (timeout=None) tries to join: the other
# calls may wait forever, but a wrong RMA_STORE must still be reported.
_JOIN_TIMEOUT = 60.0
# After how many seconds of a store that cannot be reached a rank says so (report_unreachable)
# and goes on trying: a store started a moment after its ranks is normal, but one that never
# comes (a wrong RMA_STORE) would leave the rank silent for all of RMA_TIMEOUT.
UNREACHABLE_REPORT_AFTER = 3.0


def _describe_keys(keys: list[str], limit: int = 4) -> str:
    """Name the first few keys of a request for an error message."""
    shown = ", ".join(repr(k) for k in keys[:limit])
    return shown if len(keys) <= limit else f"{shown} and {len(keys) - limit} more keys"


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
    unreachable or refuses this rank.  report_unreachable (a rank's own
    client, whose `timeout` is RMA_TIMEOUT) says on stderr once, after
    UNREACHABLE_REPORT_AFTER seconds, that it cannot reach the store yet.
    `timeout` is also the deadline of put() and the default one of get()
    and get_many(); None means no deadline for those (joining still gives
    up after 60 s).  Requests may
    come from several threads; one reader thread receives every frame and
    hands replies to the waiting request and dead notices to the
    on_peer_dead callbacks.
    """

    def __init__(
        self, address: str, secret: str, rank: int, *, timeout: float | None = 60.0, report_unreachable: bool = False
    ):
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
        self._silent: set[int] = set()  # of _dead: gone silent rather than ended
        self._lost = False
        self._closing = False
        self._closed = False

        try:
            host, port = parse_address(address)
        except ValueError as exc:
            raise BootstrapError(f"rma: {exc} (RMA_STORE)") from None
        join_timeout = _JOIN_TIMEOUT if timeout is None else timeout
        self._sock = self._connect(host, port, join_timeout, report_unreachable)
        self._channel = Channel(self._sock, JSON)
        try:
            self._hello(secret, rank, join_timeout)
        except BaseException:
            self._sock.close()
            raise
        self._reader = threading.Thread(target=self._read_loop, name=f"rma-store-client-{rank}", daemon=True)
        self._reader.start()

    # -- connection set-up -------------------------------------------------

    def _connect(self, host: str, port: int, timeout: float, report: bool) -> socket.socket:
        """Connect to the store, retrying on refusal until the deadline passes; with `report`,
        say once on stderr that it cannot be reached yet after UNREACHABLE_REPORT_AFTER s."""
        silent_after = link_timeout()
        start = time.monotonic()
        deadline = start + timeout
        report_at = start + UNREACHABLE_REPORT_AFTER if report else math.inf
        delay = 0.01
        while True:
            now = time.monotonic()
            remaining = deadline - now
            try:
                # (An attempt that hangs, towards a host that drops packets, ends in time for the report.)
                attempt = min(remaining, report_at - now) if report_at > now else remaining
                sock = socket.create_connection((host, port), timeout=max(attempt, 0.1))
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                watch_link(sock, silent_after)  # a store whose host went silent counts as lost
                return sock
            except OSError as exc:
                reason = exc.strerror or str(exc)
                # A store started a moment after the ranks is normal under a
                # batch system; keep trying with a short, growing delay.
                if remaining <= 0 or isinstance(exc, socket.gaierror):
                    raise BootstrapError(
                        f"rma: cannot reach the rendezvous store at {self.address} "
                        f"(RMA_STORE) as rank {self.rank} within {timeout:g} s: {reason}"
                    ) from None
                if time.monotonic() >= report_at:
                    report_at = math.inf
                    until = f"RMA_TIMEOUT ({timeout:g} s)" if self.timeout is not None else f"{timeout:g} s have passed"
                    print(
                        f"rma: rank {self.rank}: cannot reach the job's store at {self.address} ({reason}); "
                        f"retrying until {until}",
                        file=sys.stderr,
                        flush=True,
                    )
                time.sleep(min(delay, max(remaining, 0)))
                delay = min(delay * 2, 0.5)

    def _hello(self, secret: str, rank: int, timeout: float) -> None:
        """Send the hello frame and raise BootstrapError unless the store accepts it."""
        self._sock.settimeout(timeout)
        try:
            self._channel.send({"op": "hello", "secret": secret, "rank": rank})
            reply = self._channel.receive()
        except (OSError, ValueError) as exc:
            raise BootstrapError(
                f"rma: the rendezvous store at {self.address} did not answer rank {rank}: {exc}"
            ) from None
        finally:
            self._sock.settimeout(None)
        if reply is None:
            raise BootstrapError(f"rma: the rendezvous store at {self.address} closed the connection of rank {rank}")
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
        self._request({"op": "put", "key": str(key), "value": encode_value(value)}, self.timeout)

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
        return [decode_value(v) for v in reply["values"]]

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

    def unreachable(self, rank: int) -> bool:
        """Whether a rank announced dead (-1: the store) went silent rather than ended: its
        connection, or ours to the store, had no answer for RMA_LINK_TIMEOUT seconds."""
        with self._state_lock:
            return rank in self._silent

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
        self._channel.shutdown()
        self._channel.close()
        if self._reader is not threading.current_thread():
            self._reader.join(timeout=5.0)

    def __enter__(self) -> StoreClient:
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
        frame = JSON.pack(msg)
        try:
            try:
                # One lock keeps frames of concurrent requests from interleaving.
                with self._send_lock:
                    self._channel.send_packed(frame)
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
                    f"rma: rank {self.rank}: the rendezvous store did not answer {msg['op']} within {timeout:g} s"
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
        silent = False
        try:
            while True:
                msg = self._channel.receive()
                if msg is None:
                    break
                if "event" in msg:
                    if msg["event"] == "dead":
                        self._announce(int(msg["rank"]), bool(msg.get("silent")))
                    continue
                with self._state_lock:
                    slot = self._pending.get(msg.get("id"))
                # A reply to a request that already timed out is dropped.
                if slot is not None:
                    slot.reply = msg
                    slot.event.set()
        except TimeoutError:
            silent = True  # the keepalive probes went unanswered (store_protocol.watch_link)
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
            self._announce(-1, silent)

    def _announce(self, rank: int, silent: bool = False) -> None:
        with self._state_lock:
            if rank in self._dead:
                return
            self._dead.append(rank)
            if silent:
                self._silent.add(rank)
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
