"""rmarun's standard input for the ranks that --stdin names, as mpiexec gives it.

One rank (the default, rank 0) reads rmarun's own standard input, inherited: nothing of rmarun
stands between them, so a rank that never reads holds nothing up, and a terminal stays a
terminal (input() edits lines). Several ranks (`--stdin all`) each get a copy of every byte:
rmarun reads its input and writes it into a pipe per rank, each through a thread of its own
with a queue, so that a rank that does not read holds up neither the others nor rmarun, and a
rank that ended takes no more. The relay ends with the job, while its input is still open.
"""

from __future__ import annotations

import os
import queue
import select
import subprocess
import threading
from typing import IO

__all__ = ["StdinRelay", "stdin_for"]

_CHUNK = 64 * 1024
# Seconds between looks at whether the job ended, while rmarun's input brings nothing.
_POLL = 0.2


def stdin_for(rank: int, readers: list[int]) -> int | None:
    """What rank `rank` reads (subprocess.Popen's stdin): rmarun's own input when it is the only
    reader, a pipe from the relay when it is one of several, else /dev/null."""
    if rank not in readers:
        return subprocess.DEVNULL
    return None if len(readers) == 1 else subprocess.PIPE


class StdinRelay:
    """Copy rmarun's standard input (fd 0) into the pipes of several ranks until it ends, or
    until stop()."""

    def __init__(self) -> None:
        self._queues: list[queue.SimpleQueue[bytes | None]] = []
        self._stopped = threading.Event()

    def add(self, pipe: IO[bytes]) -> None:
        """Give a rank's input pipe its copy of everything (before start())."""
        chunks: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        self._queues.append(chunks)
        threading.Thread(target=_write, args=(pipe, chunks), name="rmarun-stdin-writer", daemon=True).start()

    def start(self) -> None:
        threading.Thread(target=self._read, name="rmarun-stdin", daemon=True).start()

    def stop(self) -> None:
        """End the relay: rmarun's input stays unread from here on (its later bytes are not ours)."""
        self._stopped.set()

    def _read(self) -> None:
        # os.read on the descriptor, not sys.stdin: a thread blocked in a buffered reader's read
        # holds its lock, and Python's shutdown would wait for it.
        try:
            while not self._stopped.is_set():
                ready, _, _ = select.select([0], [], [], _POLL)
                if not ready:
                    continue
                chunk = os.read(0, _CHUNK)
                if not chunk:
                    break
                for chunks in self._queues:
                    chunks.put(chunk)
        except (OSError, ValueError):
            pass  # (a closed or unreadable input ends the ranks' input as an end of file does)
        for chunks in self._queues:
            chunks.put(None)


def _write(pipe: IO[bytes], chunks: queue.SimpleQueue[bytes | None]) -> None:
    """Write one rank's copy until its end (None). Once the rank stops reading for good (its pipe
    broken: it ended, or closed its input), the rest is let go."""
    broken = False
    while (chunk := chunks.get()) is not None:
        if broken:
            continue
        try:
            pipe.write(chunk)
            pipe.flush()
        except OSError:
            broken = True
            _close(pipe)
    _close(pipe)


def _close(pipe: IO[bytes]) -> None:
    try:
        pipe.close()
    except OSError:
        pass  # (a broken pipe's last flush)
