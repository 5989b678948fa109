"""Make the stacks of stuck ranks (faulthandler dumps) readable: the test's, not rma's."""

from __future__ import annotations

import os

__all__ = ["format_stacks"]

_HERE = os.path.dirname(os.path.abspath(__file__))
# Frames of rma's machinery, not the test's, on a worker: the worker's modules and the job's.
_MACHINERY_DIRS = (os.path.join(_HERE, "worker"), os.path.join(os.path.dirname(_HERE), "_job"))


def _is_machinery(path: str | None) -> bool:
    return path is not None and os.path.dirname(path) in _MACHINERY_DIRS


def _frame_file(line: str) -> str | None:
    line = line.strip()
    if not line.startswith('File "'):
        return None
    return line[len('File "') :].split('", line ', 1)[0]


def format_stacks(dump: str, main_thread: int | None) -> str:
    """Make a faulthandler dump readable: the test's thread first, without the worker's frames."""
    blocks = [b for b in dump.strip().split("\n\n") if b.strip()]
    if not blocks:
        return ""
    tag = None if main_thread is None else f"0x{main_thread:016x}"
    main, others, hidden = [], [], 0
    for block in blocks:
        header, *frames = block.splitlines()
        files = [_frame_file(f) for f in frames]
        if tag is not None and tag in header:
            # Most recent call first: the frames below the test are the worker's loop.
            while frames and (_is_machinery(files[-1]) or (files[-1] or "").startswith("<frozen")):
                frames.pop()
                files.pop()
            main.append("\n".join([f"Thread running the test {tag} (most recent call first):", *frames]))
        elif files and all(f is None or _is_machinery(f) or os.path.basename(f) == "threading.py" for f in files):
            hidden += 1
        else:
            others.append(block)
    text = "\n\n".join(main + others)
    if hidden:
        text += f"\n({hidden} thread(s) of rma's own not shown)"
    return text
