"""`python -m rma.trace FILE [--top N] [--html OUT.html]`: what a trace says, in the terminal.

Prints, per rank, the time in calls, the time waiting and on whom, and the slowest epochs with
the source lines that opened them (summary.py); `--html` also writes the job's timeline as a
self-contained page (html_page.py). A FILE that is not there but whose per-rank parts are
(`FILE.rank-<R>.json`, what the ranks write when no launcher of rma merged them) is merged
first. Exit status 0, or 2 with one line on stderr when FILE cannot be read as a trace.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .html_page import page
from .reading import Trace, TraceError, load
from .summary import render

PROG = "python -m rma.trace"


class _Failure(Exception):
    """Why the command cannot go on: its message is the one line the user sees."""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[1])
    parser.add_argument("file", metavar="FILE", help="the trace (RMA_TRACE=FILE or rmarun --trace FILE)")
    parser.add_argument("--top", type=int, default=5, metavar="N", help="the slowest N epochs per rank (default 5)")
    parser.add_argument("--html", metavar="OUT", help="also write the timeline as a self-contained HTML page")
    args = parser.parse_args(argv)
    try:
        trace = _read(Path(args.file))
        name = Path(args.file).name
        sys.stdout.write(render(trace, args.top, name))
        if args.html:
            try:
                Path(args.html).write_text(page(trace, name, args.top), encoding="utf-8")
            except OSError as exc:
                raise _Failure(f"cannot write {args.html}: {exc.strerror or exc}") from None
            print(f"\nwrote {args.html}: {len(trace.tracks)} rows, {len(trace.flows)} arrows")
    except _Failure as failure:
        print(f"{PROG}: {failure}", file=sys.stderr)
        return 2
    return 0


def _read(path: Path) -> Trace:
    try:
        return load(path)
    except FileNotFoundError:
        raise _Failure(f"{path}: no such file (nor parts {path}.rank-<R>.json to merge)") from None
    except OSError as exc:
        raise _Failure(f"{path}: cannot read it: {exc.strerror or exc}") from None
    except TraceError as exc:
        raise _Failure(f"{path}: not an rma trace: {exc}") from None


if __name__ == "__main__":
    sys.exit(main())
