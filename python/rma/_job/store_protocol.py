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
  ``{"event": "dead", "rank": r}`` when rank r's connection closed without
  "bye".  A client that joins late is told about ranks already dead.
"""

from __future__ import annotations

import base64

__all__ = ["MAX_VALUE_SIZE", "parse_address", "format_address", "encode_value", "decode_value"]

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
