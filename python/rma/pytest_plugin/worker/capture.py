"""Capture a test's output on a rank: file descriptors 1 and 2, into files."""

from __future__ import annotations

import os
import sys

__all__ = ["Capture"]

# Keep at most this much of each captured stream of one test (the end of it).
_MAX_OUTPUT = 1 << 20


class Capture:
    """Point file descriptors 1 and 2 at files while a test runs.

    Capturing the descriptors rather than sys.stdout also catches what C code,
    libfabric and child processes write, and what faulthandler writes should the
    worker crash mid-test; the plugin reads the files itself when that happens.
    """

    def __init__(self, prefix: str) -> None:
        self._files = [open(prefix + ".out", "w+b"), open(prefix + ".err", "w+b")]
        self._saved: list[int] = []

    def start(self) -> None:
        for f in self._files:
            f.seek(0)
            f.truncate()
        self.flush()
        self._saved = [os.dup(1), os.dup(2)]
        os.dup2(self._files[0].fileno(), 1)
        os.dup2(self._files[1].fileno(), 2)

    def stop(self) -> tuple[str, str]:
        self.flush()
        for fd, saved in zip((1, 2), self._saved):
            os.dup2(saved, fd)
            os.close(saved)
        self._saved = []
        texts = []
        for f in self._files:
            size = f.seek(0, os.SEEK_END)
            f.seek(max(0, size - _MAX_OUTPUT))
            data = f.read()
            if size > _MAX_OUTPUT:
                data = b"[... output cut to its last %d bytes ...]\n" % _MAX_OUTPUT + data
            texts.append(data.decode("utf-8", errors="replace"))
        return texts[0], texts[1]

    @staticmethod
    def flush() -> None:
        """Flush Python's own buffers of stdout and stderr into the file descriptors."""
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError, AttributeError):
                pass
