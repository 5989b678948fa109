"""What rmarun writes: its ranks' output, relayed line by line, and its own messages."""

from __future__ import annotations

import collections
import sys
import threading

__all__ = ["PROG", "Output", "relay", "say"]

PROG = "rmarun"
# Longest piece of output read at once, so that a rank writing binary data
# without newlines cannot make rmarun buffer without bound.
_MAX_CHUNK = 64 * 1024


class Output:
    """Write bytes to a text stream's binary buffer, line-safely across threads.

    Write errors (a closed pipe, as in ``rmarun ... | head``) switch the
    stream off instead of failing, so that ranks are still drained and
    never block on a full pipe.
    """

    def __init__(self, stream, lock: threading.Lock):
        self._stream = stream
        self._lock = lock
        self._broken = False

    def write(self, data: bytes) -> None:
        with self._lock:
            if self._broken:
                return
            try:
                buffer = getattr(self._stream, "buffer", None)
                if buffer is not None:
                    self._stream.flush()  # keep order with text written earlier
                    buffer.write(data)
                    buffer.flush()
                else:
                    self._stream.write(data.decode("utf-8", errors="replace"))
                    self._stream.flush()
            except (OSError, ValueError):
                self._broken = True


def relay(stream, out: Output, prefix: bytes | None, tail: collections.deque | None) -> None:
    """Copy one output pipe of a rank to `out` line by line, until the pipe ends.

    Each line gets `prefix` (--tag-output) if given; `tail` keeps the last lines.
    """
    at_line_start = True
    # A piece that does not end a line is held back and written together
    # with what follows it (the rest of the line, or the newline added at
    # the end), so that another rank's tagged line cannot land inside it.
    held = b""
    try:
        while True:
            chunk = stream.readline(_MAX_CHUNK)
            if not chunk:
                break
            if tail is not None:
                tail.append(chunk)
            if prefix and at_line_start:
                chunk = prefix + chunk
            at_line_start = chunk.endswith(b"\n")
            if prefix and not at_line_start and not held:
                held = chunk
                continue
            out.write(held + chunk)
            held = b""
        if held:
            # Terminate a tagged partial last line, or the next rank's
            # tag would land in the middle of it.
            out.write(held + b"\n")
    except (OSError, ValueError):
        pass
    finally:
        stream.close()


def say(message: str) -> None:
    """Print one launcher message to stderr."""
    try:
        print(f"{PROG}: {message}", file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass
