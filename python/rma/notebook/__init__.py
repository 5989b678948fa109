"""Ranks that persist across notebook cells.

    import rma.notebook
    cluster = rma.notebook.start(4)        # 4 ranks; also enables the %%rma cell magic

    %%rma
    win = rma.Window.allocate(comm, 8, np.int64)     # runs on every rank; output grouped by rank
    print(comm.rank, win.local)

    boards = cluster.pull("win.local")     # every rank's value, as a list
    cluster.push(step=3)                   # set a variable on every rank
    cluster.run("x = comm.allgather(step)")
    cluster.stop()                         # also done when the kernel exits

Each rank keeps its own namespace, with `rma`, `np` and `comm` (its world communicator) in it.
%%rma shows each rank's output as it is printed, every line marked "[rank N]"; a rank's
exception at once, under its rank (with the cell's source lines), after which the ranks still
running get rma.notebook.RAISE_GRACE seconds before they are interrupted, so that the cell ends,
and %%rma raises rma.notebook.RankError; then each rank's value of the cell's last expression
("[rank N] Out: ...") and the matplotlib figures each rank left open (as images). Interrupting
the kernel interrupts the cell on every rank (KeyboardInterrupt in the ranks' Python code) and
leaves the job running. After a rank died, every call says which and how.

``%%rma --timeline`` also records what every rank does in the cell (its rma calls, epochs,
waits and collectives, as RMA_TRACE would) and draws it under the cell's output, also when the
cell raised: one row per rank, epochs as bars, calls as ticks, waits shaded, an arrow from each
put, get and accumulate to where it completed at its target (rma.notebook.timeline).
rma.notebook.timeline() redraws the last cell's, rma.notebook.timeline(FILE) draws a trace file
of RMA_TRACE or ``rmarun --trace``, and rma.notebook.last_trace() is the trace itself (a dict:
json.dump it to a file, which Perfetto opens). Hover text (the call, its bytes and source line)
needs an interactive front end such as ipympl (``%matplotlib widget``); the inline backend
draws a still image.

cluster.py holds the ranks (Cluster), worker.py is what each rank runs, timeline.py draws a
trace; this module holds the cluster %%rma uses and the magic.
"""

from __future__ import annotations

import sys

from ..errors import RMAError
from . import timeline as _timeline  # the module, before the name is the function's
from .cluster import RAISE_GRACE, Cluster, RankError, RankResult
from .timeline import last_trace, timeline

__all__ = ["Cluster", "RankError", "RankResult", "RAISE_GRACE", "start", "current", "show", "timeline", "last_trace"]

_current: Cluster | None = None


def _prefixed(rank: int, text: str) -> str:
    return "".join(f"[rank {rank}] {line}" for line in text.splitlines(True))


def _stopped_where(error: str) -> str:
    """Where in the cell a rank we interrupted stood: ' at <cell 3>, line 4: comm.barrier()'."""
    lines = error.splitlines()
    at = [i for i, line in enumerate(lines) if line.strip().startswith('File "<cell ')]
    if not at:
        return ""
    place = lines[at[-1]].strip()[len('File "') :].split(", in ")[0].replace('"', "")
    source = lines[at[-1] + 1].strip() if at[-1] + 1 < len(lines) else ""
    return f" at {place}" + (f": {source}" if source and not source.startswith(("File ", "KeyboardInterrupt")) else "")


class _CellDisplay:
    """Show a cell's ranks in the notebook as they run: output line by line under its rank,
    an exception as soon as it is raised, then each rank's value and figures."""

    def output(self, rank: int, stream: str, text: str) -> None:
        print(_prefixed(rank, text), end="" if text.endswith("\n") else "\n", file=_stream(stream), flush=True)

    def error(self, result: RankResult) -> None:
        print(_prefixed(result.rank, result.error or ""), end="", file=sys.stderr, flush=True)

    def finish(self, results: list[RankResult]) -> None:
        stopped = [r for r in results if r.interrupted]
        if stopped:
            raised = ", ".join(str(r.rank) for r in results if r.error and not r.interrupted)
            for r in stopped:
                where = _stopped_where(r.error or "")
                print(f"[rank {r.rank}] interrupted{where}, since rank(s) {raised} raised", file=sys.stderr)
        for r in results:
            if r.display is not None:
                print(_prefixed(r.rank, f"Out: {r.display}\n"), end="")
        for r in results:
            for number, png in enumerate(r.figures, 1):
                _show_figure(r.rank, number, png)


def _stream(name: str):
    return sys.stderr if name == "stderr" else sys.stdout


def _show_figure(rank: int, number: int, png: bytes) -> None:
    print(f"[rank {rank}] figure {number}:")
    try:
        from IPython.display import Image, display
    except ImportError:
        print(f"[rank {rank}] (a {len(png)}-byte PNG: IPython shows it in a notebook)")
        return
    display(Image(data=png, format="png"))


def show(results: list[RankResult]) -> None:
    """Show what cluster.run() returned as %%rma does: each line under its rank, then values and figures."""
    display = _CellDisplay()
    for result in results:
        for stream, text in (("stdout", result.stdout), ("stderr", result.stderr)):
            if text:
                display.output(result.rank, stream, text)
        if result.error and not result.interrupted:
            display.error(result)
    display.finish(results)


def start(n: int = 4, *, provider: str | None = None, env: dict[str, str] | None = None) -> Cluster:
    """Start a cluster of `n` ranks, make it the one %%rma uses, and enable %%rma.

    `env` adds to the ranks' environment: ``start(2, env={"RMA_CHECK": "1"})``.
    """
    global _current
    if _current is not None:
        _current.stop()
    _current = Cluster(n, provider=provider, env=env)
    _register_magic()
    return _current


def current() -> Cluster:
    """Return the cluster %%rma uses."""
    if _current is None or _current.stopped:
        raise RMAError("rma.notebook: no cluster is running; call rma.notebook.start(n)")
    return _current


def _rma_cell(line: str, cell: str) -> None:
    """%%rma: run the cell on every rank, showing each rank's output as it is printed.

    ``%%rma --timeline`` also records what the ranks do in the cell and draws it under the
    cell's output (rma.notebook.timeline), even when the cell raised."""
    drawn = _options(line)
    cluster = current()
    if drawn:
        _timeline.require_matplotlib()
        _timeline.start_recording(cluster)
    display = _CellDisplay()
    results = cluster.run(cell, on_output=display.output, on_error=display.error)
    display.finish(results)
    raised = [r.rank for r in results if r.error and not r.interrupted]
    if drawn:
        try:
            trace = _timeline.take_trace(cluster)
        except RMAError as exc:
            if not raised:
                raise
            print(f"(no timeline: {exc})", file=sys.stderr)
        else:
            _timeline.show_figure(timeline(trace))
    if raised:
        raise RankError(f"the cell raised on rank(s) {', '.join(map(str, raised))} (tracebacks above)")


def _options(line: str) -> bool:
    """Read %%rma's line: whether it asks for a timeline."""
    words = line.split()
    unknown = [word for word in words if word != "--timeline"]
    if unknown:
        raise RMAError(f"%%rma: unknown option {unknown[0]!r} (the one option is --timeline)")
    return bool(words)


def _register_magic() -> None:
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is not None:
        shell.register_magic_function(_rma_cell, magic_kind="cell", magic_name="rma")


def load_ipython_extension(ipython) -> None:
    """`%load_ext rma.notebook` enables %%rma (start a cluster with rma.notebook.start)."""
    ipython.register_magic_function(_rma_cell, magic_kind="cell", magic_name="rma")
