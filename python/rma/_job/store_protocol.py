"""What the rendezvous store and its clients say to each other, and where the store is.

The launcher (``rmarun``), the pytest plugin and the notebook each run one store per job
(store_server.py). Every rank connects to it (store_client.py), publishes its endpoint
address and reads the others'. Because every rank keeps its connection open for its whole
life, the server also learns when a rank dies (its connection closes without a prior "bye")
and tells every other rank.

Wire protocol (both directions): frames (frames.py) of UTF-8 JSON holding one object. Byte
values travel base64-encoded.

* client -> server, first frame: ``{"op": "hello", "secret": s, "rank": r}``;
  the server answers ``{"ok": true, "size": n}`` or
  ``{"ok": false, "error": reason}`` and then closes the connection.
* client -> server requests carry an ``"id"`` which the reply echoes:
  ``put`` (``key``, ``value``), ``get`` (``keys``: the reply comes when all of
  them exist, with ``values``), ``bye`` (this rank finished normally).
* server -> client events carry ``"event"`` instead of ``"id"``:
  ``{"event": "dead", "rank": r, "silent": s}`` when rank r's connection closed without
  "bye" (s: it went silent instead, RMA_LINK_TIMEOUT).  A client that joins late is told
  about ranks already dead.
"""

from __future__ import annotations

import base64
import socket

__all__ = [
    "MAX_VALUE_SIZE", "parse_address", "format_address", "encode_value", "decode_value", "watch_link",
    "address_towards",
]  # fmt: skip

#: Largest value accepted by StoreClient.put().
MAX_VALUE_SIZE = 16 * 1024 * 1024


def encode_value(value: bytes) -> str:
    """Return a byte value as the text that travels in JSON."""
    return base64.b64encode(value).decode("ascii")


def decode_value(text: str) -> bytes:
    """Return the byte value encode_value() made `text` of."""
    return base64.b64decode(text.encode("ascii"), validate=True)


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


def format_address(host: str, port: int) -> str:
    """Join host and port, bracketing IPv6 literals so that parse_address round-trips."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def address_towards(host: str) -> str:
    """This machine's address on the route to `host`: where a store listens for ranks there.
    OSError (socket.gaierror) when the name does not resolve."""
    family, _, _, _, address = socket.getaddrinfo(host, 9, type=socket.SOCK_DGRAM)[0]
    with socket.socket(family, socket.SOCK_DGRAM) as probe:
        probe.connect(address)  # (no packet: it only picks the route)
        return probe.getsockname()[0]


# Linux refuses keepalive probes more than 32767 s apart or after more idle time, and more than
# 127 of them (EINVAL).
_LONGEST_KEEPALIVE_SECONDS = 32767
_MOST_KEEPALIVE_PROBES = 127


def watch_link(sock: socket.socket, seconds: float) -> None:
    """Make the kernel give up on sock about `seconds` after its other end stopped answering:
    keepalive probes 1 s apart (further apart when more than the kernel's 127 probes would be
    needed) after a third of it idle, and unacknowledged data no longer than all of it
    (TCP_USER_TIMEOUT). 0: never."""
    if seconds <= 0 or not hasattr(socket, "TCP_KEEPIDLE"):
        return
    idle = min(max(1, int(seconds / 3)), _LONGEST_KEEPALIVE_SECONDS)
    probing = max(1, int(seconds) - idle)
    interval = -(-probing // _MOST_KEEPALIVE_PROBES)  # (rounded up)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE, idle)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL, interval)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT, max(1, probing // interval))
    if hasattr(socket, "TCP_USER_TIMEOUT"):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT, int(seconds * 1000))
