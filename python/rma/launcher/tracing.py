"""rmarun's side of the trace (--trace FILE, RMA_TRACE=FILE): before the job, clear the parts a
previous run left next to FILE (they would be merged into this one); after it, merge the parts
the ranks wrote (rma.trace.recording) into FILE and say where it is, also when the job failed:
a failed job's trace is the one most worth reading."""

from __future__ import annotations

import glob
import os

from ..trace.merge import merge_files
from .output import say

__all__ = ["prepare", "finish"]


def prepare(trace_file: str) -> None:
    for stale in glob.glob(glob.escape(trace_file) + ".rank-*.json"):
        os.remove(stale)


def finish(trace_file: str, size: int) -> None:
    try:
        trace = merge_files(trace_file, size)
    except FileNotFoundError:
        say(f"no rank wrote its part of the trace {trace_file} (RMA_TRACE)")
        return
    except (OSError, ValueError) as error:
        say(f"could not merge the trace {trace_file}: {error}")
        return
    missing = trace["otherData"]["missing_ranks"]
    dropped = sum(trace["otherData"]["dropped"].values())
    notes = []
    if missing:
        notes.append(f"no records from rank(s) {', '.join(map(str, missing))}")
    if dropped:
        notes.append(f"{dropped} oldest records dropped (RMA_TRACE_EVENTS)")
    extra = f" ({'; '.join(notes)})" if notes else ""
    say(f"trace written to {trace_file}{extra}: open it in ui.perfetto.dev, or `python -m rma.trace {trace_file}`")
