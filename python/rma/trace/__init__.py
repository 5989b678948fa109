"""See what the ranks did: RMA_TRACE=FILE records every rank's calls, waits, epochs and errors
and writes one trace (the Chrome trace event format: Perfetto's UI and chrome://tracing open
it; docs/trace_format.md says what is in it).

- `rma.trace.recording`: one rank's side (start the ring, align clocks, take the records);
- `rma.trace.merge`: the ranks' parts joined into the job's trace;
- `python -m rma.trace FILE`: a summary per rank; `--html OUT` a page with the timeline;
- `rma.notebook.timeline()` / `%%rma --timeline`: the timeline of a notebook cell.
"""

from __future__ import annotations

import os
from typing import Any

from .files import read_json
from .merge import merge_files

__all__ = ["load"]


def load(path: str | os.PathLike) -> dict[str, Any]:
    """Read the trace in path (plain or gzip-compressed JSON), merging the ranks' parts first if
    only they are there (FILE.rank-<R>.json: no launcher of ours merged them); FileNotFoundError
    if neither is."""
    if not os.path.exists(path):
        return merge_files(os.fspath(path))
    return read_json(path)
