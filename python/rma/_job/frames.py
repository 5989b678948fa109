"""Send and receive length-prefixed frames over a stream socket.

A frame is a 4-byte big-endian length followed by that many bytes. Every conversation of a
job uses them: the rendezvous store (frames of JSON, :data:`JSON`), and the pytest plugin and
the notebook with their workers (frames of pickles, :data:`PICKLE`).
"""

from __future__ import annotations

import json
import pickle
import socket
import struct
from collections.abc import Callable
from typing import Any, NamedTuple

__all__ = ["Channel", "Codec", "JSON", "PICKLE", "MAX_FRAME"]

_HEADER = struct.Struct(">I")
# Largest frame accepted: only a guard against a corrupted stream (a store reply holding many
# values, or a test's captured output, may be large).
MAX_FRAME = 1 << 30
# Most bytes read at once.
_CHUNK = 1 << 20


class Codec(NamedTuple):
    """How messages become the bytes of a frame, and back."""

    dumps: Callable[[Any], bytes]
    loads: Callable[[bytes], Any]

    def pack(self, message: Any) -> bytes:
        """Return the frame of `message`: to send later, or to several channels."""
        payload = self.dumps(message)
        return _HEADER.pack(len(payload)) + payload


def _json_object(payload: bytes) -> dict:
    obj = json.loads(payload.decode("utf-8"))
    if not isinstance(obj, dict):
        raise ConnectionError("malformed frame: not a JSON object")
    return obj


#: Dicts as UTF-8 JSON (the store: nothing a peer sends can run code here).
JSON = Codec(lambda obj: json.dumps(obj, separators=(",", ":")).encode("utf-8"), _json_object)
#: Any picklable object (between the processes of one user).
PICKLE = Codec(lambda obj: pickle.dumps(obj, pickle.HIGHEST_PROTOCOL), pickle.loads)


class Channel:
    """Frame messages over one stream socket, in both directions.

    What was read beyond a frame is kept for the next one, so that a timeout or an interrupt
    while receiving loses nothing. Sending from several threads needs a lock around send();
    receiving is for one thread at a time. `limit` (settable) is the largest frame accepted.
    """

    def __init__(self, sock: socket.socket, codec: Codec = PICKLE, limit: int = MAX_FRAME) -> None:
        self.sock = sock
        self.codec = codec
        self.limit = limit
        self._buffer = bytearray()

    def send(self, message: Any) -> None:
        """Send one message."""
        self.sock.sendall(self.codec.pack(message))

    def send_packed(self, frame: bytes) -> None:
        """Send a frame made by Codec.pack()."""
        self.sock.sendall(frame)

    def receive(self) -> Any | None:
        """Block until one message arrives; return None when the stream ends between frames.

        Raises ConnectionError when it ends within a frame or a frame is over the limit.
        """
        while True:
            payload = self._take_frame()
            if payload is not None:
                return self.codec.loads(payload)
            data = self.sock.recv(self._wanted())
            if not data:
                if self._buffer:
                    raise ConnectionError("connection closed in the middle of a frame")
                return None
            self._buffer += data

    def receive_ready(self) -> list[Any] | None:
        """Read once (for a socket select() found readable); return the messages now complete.

        Returns None at the end of the stream.
        """
        if not self.fill():
            return None
        messages = []
        while (payload := self._take_frame()) is not None:
            messages.append(self.codec.loads(payload))
        return messages

    def fill(self) -> bool:
        """Read once (for a readable socket) and keep what came; return False at the end of the stream."""
        data = self.sock.recv(self._wanted())
        self._buffer += data
        return bool(data)

    def take(self) -> Any | None:
        """Return the next message already read, or None when none is complete yet (JSON only:
        a pickled None would be ambiguous)."""
        payload = self._take_frame()
        return None if payload is None else self.codec.loads(payload)

    def shutdown(self) -> None:
        """Break both directions at once: a thread blocked receiving wakes up to the end.

        Does nothing to a socket that is already broken or closed.
        """
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def close(self) -> None:
        self.sock.close()

    def _wanted(self) -> int:
        """Return how much to read: the rest of the frame under way, within bounds."""
        if len(self._buffer) < _HEADER.size:
            return 1 << 16
        (length,) = _HEADER.unpack_from(self._buffer)
        return max(1 << 16, min(_HEADER.size + length - len(self._buffer), _CHUNK))

    def _take_frame(self) -> bytes | None:
        """Remove one complete frame from the buffer and return its payload, or None."""
        if len(self._buffer) < _HEADER.size:
            return None
        (length,) = _HEADER.unpack_from(self._buffer)
        if length > self.limit:
            raise ConnectionError(f"frame of {length} bytes exceeds the limit of {self.limit}")
        end = _HEADER.size + length
        if len(self._buffer) < end:
            return None
        payload = bytes(self._buffer[_HEADER.size : end])
        del self._buffer[:end]
        return payload
