"""See what the ranks did: RMA_TRACE=FILE records every rank's calls, waits, epochs and errors
and writes one trace (the Chrome trace event format: Perfetto's UI and chrome://tracing open
it; docs/trace_format.md says what is in it).

- `rma.trace.recording`: one rank's side (start the ring, align clocks, take the records);
- `rma.trace.merge`: the ranks' parts joined into the job's trace;
- `python -m rma.trace FILE`: a summary per rank; `--html OUT` a page with the timeline;
- `rma.notebook.timeline()` / `%%rma --timeline`: the timeline of a notebook cell.
"""

from __future__ import annotations

from .files import read_trace as load

__all__ = ["load"]
