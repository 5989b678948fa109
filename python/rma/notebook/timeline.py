"""A trace drawn as a figure: `rma.notebook.timeline` and what ``%%rma --timeline`` shows.

The figure has one row per rank (labelled "rank R", rank 0 on top) and time in milliseconds
across, all of it in one Axes, ``figure.axes[0]``:

- epochs are horizontal bars coloured by their kind (fence, access, exposure, lock,
  lock_all); epochs that overlap on one rank (two windows, a lock per target) are offset a
  little within the row, so that each stays visible;
- calls are ticks (short vertical lines) at their start, collectives in a colour of their own;
- waits are translucent red spans over the row, for as long as the rank waited;
- each put, get or accumulate is an arrow from its call on the origin's row to the moment it
  completed on the target's row (the trace's flow events);
- errors (a ConflictError, a PeerError) are red crosses.

Every artist carries a gid that says what it draws, so that a program (or a test) can count
them: PolyCollections with gid ``"rma-epoch"`` and ``"rma-wait"`` and LineCollections with gid
``"rma-call"`` hold one path or segment per epoch, wait or call (``len(c.get_paths())``,
``len(c.get_segments())``); each arrow is a FancyArrowPatch of its own with gid ``"rma-flow"``
(in ``axes.patches``) whose label says the call, its origin and target and its bytes; errors are
a PathCollection with gid ``"rma-error"``, one offset each.

Hover text: moving the mouse over an epoch, a call, a wait, an arrow or an error shows what it is
(the call, its target, bytes and the source line that made it) in a small box. That needs a front
end that sends mouse events back to the kernel: ipympl (``%matplotlib widget``), nbagg
(``%matplotlib notebook``) or a desktop backend. With the default inline backend a figure is a
still PNG image and nothing can react to the mouse; the picture is the same. ipympl is not a
dependency of rma: install it to get hover text.
"""

from __future__ import annotations

import bisect
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import RMAError
from ..trace import load as read_trace

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from .cluster import Cluster

__all__ = ["timeline", "last_trace", "GIDS"]

#: The gid of each kind of artist the figure holds.
GIDS = {
    "epoch": "rma-epoch",
    "call": "rma-call",
    "wait": "rma-wait",
    "flow": "rma-flow",
    "error": "rma-error",
    "hover": "rma-hover",
}

# The last trace %%rma --timeline recorded (what timeline() draws without an argument).
_last: dict | None = None

_EPOCH_COLOURS = {
    "fence": "tab:blue",
    "access": "tab:green",
    "exposure": "tab:orange",
    "lock": "tab:purple",
    "lock_all": "tab:brown",
}
_FLOW_COLOURS = {"put": "tab:red", "get": "tab:blue", "accumulate": "tab:olive"}
# Where things sit within a row (row r spans r - 0.5 .. r + 0.5; rank 0 is on top).
_EPOCH_TOP, _EPOCH_HEIGHT, _LANE_STEP, _LANES = -0.32, 0.34, 0.14, 4
_TICK_HALF = 0.4
_WAIT_HALF = 0.46


@dataclass
class _Item:
    rank: int
    start: float  # ms
    end: float  # ms
    text: str
    kind: str = ""
    lane: int = 0


@dataclass
class _Flow:
    origin: int
    start: float
    target: int
    end: float
    call: str
    text: str


@dataclass
class _Parsed:
    ranks: int
    labels: list[str]
    calls: list[_Item] = field(default_factory=list)
    waits: list[_Item] = field(default_factory=list)
    epochs: list[_Item] = field(default_factory=list)
    flows: list[_Flow] = field(default_factory=list)
    errors: list[_Item] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    end: float = 0.0


def last_trace() -> dict | None:
    """Return the trace the last ``%%rma --timeline`` cell recorded (a dict in the format of
    docs/trace_format.md, which ``json.dump`` writes as a file Perfetto opens), or None."""
    return _last


def timeline(trace: dict | str | os.PathLike | None = None, *, width: float = 10.0) -> Figure:
    """Draw a trace as a matplotlib figure and return it.

    `trace` is a trace in the format of docs/trace_format.md: the dict ``rma.trace.merge``
    makes, or the path of a file ``RMA_TRACE=FILE`` or ``rmarun --trace FILE`` wrote; None draws
    the last trace ``%%rma --timeline`` recorded. `width` is the figure's width in inches.

    One row per rank, time in ms across: epochs as bars coloured by kind, calls as ticks, waits
    shaded, an arrow from each put, get and accumulate to where it completed at its target. In
    a notebook the returned figure shows as the cell's value. Hover text (the call, its target,
    bytes and source line under the mouse) needs an interactive front end such as ipympl
    (``%matplotlib widget``); the default inline backend shows a still image, without hover.
    The module's docstring says which artists hold what (their gids), for programs that read
    the figure.
    """
    parsed = _parse(_load(trace))
    return _draw(parsed, width)


# ---- reading a trace ----


def _load(trace: dict | str | os.PathLike | None) -> dict:
    if trace is None:
        if _last is None:
            raise RMAError(
                "rma.notebook.timeline: no trace yet; run a cell with %%rma --timeline, or pass a trace or its file"
            )
        return _last
    if isinstance(trace, (str, os.PathLike)):
        trace = read_trace(trace)
    if isinstance(trace, list):  # the format's other form: the events alone
        trace = {"traceEvents": trace}
    if not isinstance(trace, dict) or not isinstance(trace.get("traceEvents"), list):
        raise ValueError("rma.notebook.timeline: not a trace (a dict with a list of traceEvents)")
    return trace


def _ms(us: Any) -> float:
    return float(us or 0) / 1000.0


def _bytes(n: Any) -> str:
    return f"{n} B" if n is not None else ""


def _joined(*parts: str) -> str:
    return ", ".join(p for p in parts if p)


def _parse(trace: dict) -> _Parsed:
    events = [e for e in trace["traceEvents"] if isinstance(e, dict)]
    other = trace.get("otherData") or {}
    pids = [e["pid"] for e in events if isinstance(e.get("pid"), int)]
    ranks = int(other.get("ranks") or (max(pids) + 1 if pids else 1))
    hosts = {str(k): v for k, v in (other.get("hosts") or {}).items()}
    several_hosts = len(set(hosts.values())) > 1
    missing = {int(r) for r in other.get("missing_ranks") or []}
    labels = []
    for rank in range(ranks):
        label = f"rank {rank}"
        if several_hosts and str(rank) in hosts:
            label += f" ({hosts[str(rank)]})"
        if rank in missing:
            label += " (missing)"
        labels.append(label)
    parsed = _Parsed(ranks, labels)
    dropped = {int(r): int(n) for r, n in (other.get("dropped") or {}).items() if n}
    for rank, n in sorted(dropped.items()):
        parsed.notes.append(f"rank {rank} dropped {n} records")
    if missing:
        parsed.notes.append(f"no records from rank(s) {', '.join(map(str, sorted(missing)))}")

    last: dict[int, float] = {}  # each rank's last moment, for epochs left open
    opened: dict[str, tuple[dict, float]] = {}
    closed: dict[str, float] = {}
    flow_starts: dict[Any, dict] = {}
    flow_ends: dict[Any, dict] = {}
    calls_at: dict[tuple[int, Any], dict] = {}  # the args of each rank's call at each moment
    arrivals: dict[int, tuple[list, list]] = {}  # rank: (its arrivals (ts, dur, args) by ts, their ts)
    for e in events:
        ph, cat, pid = e.get("ph"), e.get("cat"), e.get("pid")
        if not isinstance(pid, int) or not 0 <= pid < ranks:
            continue
        start = _ms(e.get("ts"))
        end = start + _ms(e.get("dur"))
        last[pid] = max(last.get(pid, 0.0), end)
        parsed.end = max(parsed.end, end)
        args = e.get("args") or {}
        name = str(e.get("name", ""))
        if ph == "X" and cat in ("rma", "collective", "message") and e.get("tid", 0) == 0:
            calls_at[(pid, e.get("ts"))] = args
            parsed.calls.append(_Item(pid, start, end, _call_text(name, args, end - start), cat))
        elif ph == "X" and cat == "wait":
            parsed.waits.append(_Item(pid, start, end, f"{name} ({end - start:.3f} ms)"))
        elif ph == "b" and cat == "epoch":
            opened[str(e.get("id"))] = (e, start)
        elif ph == "e" and cat == "epoch":
            closed[str(e.get("id"))] = start
        elif ph == "s" and cat == "flow":
            flow_starts[e.get("id")] = e
        elif ph == "f" and cat == "flow":
            flow_ends[e.get("id")] = e
        elif ph == "X" and cat == "arrival":
            arrivals.setdefault(pid, ([], []))[0].append((e.get("ts") or 0, e.get("dur") or 0, args))
        elif ph == "i" and cat == "error":
            parsed.errors.append(_Item(pid, start, start, _joined(name, str(args.get("message", ""))), "error"))
    for key, (e, start) in opened.items():
        args = e.get("args") or {}
        end = closed.get(key, last.get(e["pid"], start))
        kind = str(args.get("kind", "") or str(e.get("name", "")).split(" ")[0])
        text = _joined(
            f"{e.get('name', kind)} epoch",
            f"window {args['window']}" if "window" in args else "",
            f"ranks {args['ranks']}" if "ranks" in args else "",
            f"opened at {args['site']}" if args.get("site") else "",
            f"{end - start:.3f} ms",
        )
        parsed.epochs.append(_Item(e["pid"], start, max(end, start), text, kind))
    _assign_lanes(parsed.epochs)
    for found, starts in arrivals.values():
        found.sort(key=lambda a: a[0])
        starts.extend(a[0] for a in found)
    for key, s in flow_starts.items():
        f = flow_ends.get(key)
        if f is None:
            continue
        call = str(s.get("name", ""))
        made = calls_at.get((s["pid"], s.get("ts")), {})
        arrived = _arrival(arrivals.get(f["pid"], ([], [])), f.get("ts") or 0, s["pid"])
        size = made.get("bytes", arrived.get("bytes"))
        text = _joined(
            f"{call}: rank {s['pid']} -> rank {f['pid']}",
            _bytes(size),
            f"at {made['site']}" if made.get("site") else "",
            f"completed by {arrived['completed_by']}" if arrived.get("completed_by") else "",
        )
        parsed.flows.append(_Flow(s["pid"], _ms(s.get("ts")), f["pid"], _ms(f.get("ts")), call, text))
    parsed.calls.sort(key=lambda item: (item.rank, item.start))
    return parsed


def _arrival(found: tuple[list, list], ts: float, origin: int) -> dict:
    """The args of the arrival from `origin` that holds the moment `ts` (a flow's end)."""
    arrivals, starts = found
    at = bisect.bisect_right(starts, ts)
    for start, dur, args in reversed(arrivals[max(0, at - 64) : at]):
        if start <= ts <= start + dur and args.get("from") == origin:
            return args
    return {}


def _call_text(name: str, args: dict, took: float) -> str:
    return _joined(
        name,
        f"to rank {args['target']}" if "target" in args else "",
        _bytes(args.get("bytes")),
        f"window {args['window']}" if "window" in args else "",
        f"at {args['site']}" if args.get("site") else "",
        f"{took:.3f} ms",
    )


def _assign_lanes(epochs: list[_Item]) -> None:
    """Give each epoch the lowest lane of its rank that is free when it opens."""
    ends: dict[int, list[float]] = {}
    for item in sorted(epochs, key=lambda i: (i.rank, i.start, -i.end)):
        lanes = ends.setdefault(item.rank, [])
        free = [lane for lane, end in enumerate(lanes) if end <= item.start]
        lane = free[0] if free else len(lanes)
        if not free:
            lanes.append(0.0)
        lanes[lane] = item.end
        item.lane = lane


def _flow_family(call: str) -> str:
    if "get" in call and "accumulate" not in call:
        return "get"
    if call.endswith("put"):
        return "put"
    return "accumulate"


# ---- drawing ----


def _new_figure(width: float, height: float) -> Figure:
    """A figure of pyplot's where the backend is interactive (ipympl, nbagg, a desktop one), so
    that it shows as a live canvas there; a figure of its own otherwise (the inline backend,
    Agg), which pyplot does not show twice nor keep open."""
    import matplotlib

    backend = str(matplotlib.get_backend()).lower()
    still = "inline" in backend or backend in ("agg", "pdf", "ps", "svg", "pgf", "cairo", "template")
    if not still:
        import matplotlib.pyplot as plt

        return plt.figure(figsize=(width, height), layout="constrained")
    from matplotlib.figure import Figure

    class _Timeline(Figure):
        def _repr_png_(self) -> bytes:  # shown as an image even where IPython has no printer for figures
            import io

            buffer = io.BytesIO()
            self.savefig(buffer, format="png")
            return buffer.getvalue()

    return _Timeline(figsize=(width, height), layout="constrained")


def _draw(parsed: _Parsed, width: float) -> Figure:
    from matplotlib.collections import LineCollection, PolyCollection
    from matplotlib.lines import Line2D
    from matplotlib.patches import FancyArrowPatch, Patch

    figure = _new_figure(width, 1.3 + 0.55 * max(parsed.ranks, 1))
    axes = figure.add_subplot()
    # (priority, artist, text of each item): under the mouse, the narrowest thing wins.
    hover: list[tuple[int, Any, list[str]]] = []
    legend: list[Any] = []

    def rectangle(x0: float, x1: float, y0: float, height: float) -> list[tuple[float, float]]:
        x1 = max(x1, x0 + 1e-6)
        return [(x0, y0), (x1, y0), (x1, y0 + height), (x0, y0 + height)]

    if parsed.waits:
        waits = PolyCollection(
            [rectangle(w.start, w.end, w.rank - _WAIT_HALF, 2 * _WAIT_HALF) for w in parsed.waits],
            facecolors="tab:red",
            alpha=0.22,
            edgecolors="none",
            zorder=1,
            gid=GIDS["wait"],
            label="waits",
        )
        axes.add_collection(waits)
        hover.append((3, waits, [w.text for w in parsed.waits]))
        legend.append(Patch(facecolor="tab:red", alpha=0.22, label="waiting"))

    kinds = list(dict.fromkeys(e.kind for e in parsed.epochs))
    for kind in kinds:
        items = [e for e in parsed.epochs if e.kind == kind]
        colour = _EPOCH_COLOURS.get(kind, "tab:gray")
        bars = PolyCollection(
            [
                rectangle(e.start, e.end, e.rank + _EPOCH_TOP + (e.lane % _LANES) * _LANE_STEP, _EPOCH_HEIGHT)
                for e in items
            ],
            facecolors=colour,
            edgecolors=colour,
            alpha=0.45,
            linewidths=0.8,
            zorder=2,
            gid=GIDS["epoch"],
            label=f"{kind} epochs",
        )
        axes.add_collection(bars)
        hover.append((4, bars, [e.text for e in items]))
        legend.append(Patch(facecolor=colour, edgecolor=colour, alpha=0.45, label=f"{kind} epoch"))

    for cat, colour, label in (
        ("rma", "black", "call"),
        ("collective", "tab:purple", "collective"),
        ("message", "tab:green", "message"),
    ):
        items = [c for c in parsed.calls if c.kind == cat]
        if not items:
            continue
        ticks = LineCollection(
            [[(c.start, c.rank - _TICK_HALF), (c.start, c.rank + _TICK_HALF)] for c in items],
            colors=colour,
            linewidths=1.0,
            zorder=3,
            gid=GIDS["call"],
            label=f"{label}s",
        )
        axes.add_collection(ticks)
        hover.append((1, ticks, [c.text for c in items]))
        legend.append(Line2D([], [], color=colour, marker="|", linestyle="none", markersize=10, label=label))

    families: dict[str, None] = {}
    for flow in parsed.flows:
        family = _flow_family(flow.call)
        families[family] = None
        same_row = flow.origin == flow.target
        arrow = FancyArrowPatch(
            (flow.start, flow.origin),
            (flow.end, flow.target),
            arrowstyle="-|>",
            mutation_scale=9,
            color=_FLOW_COLOURS[family],
            alpha=0.75,
            linewidth=0.9,
            shrinkA=0,
            shrinkB=0,
            connectionstyle="arc3,rad=-0.4" if same_row else "arc3,rad=0",
            zorder=4,
            gid=GIDS["flow"],
            label=flow.text,
        )
        axes.add_artist(arrow)  # add_patch would grow the data limits arrow by arrow: slow, and set below
        hover.append((2, arrow, [flow.text]))
    for family in families:
        legend.append(Line2D([], [], color=_FLOW_COLOURS[family], marker=">", label=f"{family} -> target"))

    if parsed.errors:
        crosses = axes.scatter(
            [e.start for e in parsed.errors],
            [e.rank for e in parsed.errors],
            marker="X",
            s=70,
            color="red",
            edgecolors="black",
            linewidths=0.6,
            zorder=5,
            gid=GIDS["error"],
            label="errors",
        )
        hover.append((0, crosses, [e.text for e in parsed.errors]))
        legend.append(Line2D([], [], color="red", marker="X", linestyle="none", label="error"))

    axes.set_ylim(parsed.ranks - 0.5, -0.5)  # rank 0 on top
    axes.set_yticks(range(parsed.ranks), parsed.labels)
    end = max(parsed.end, max((f.end for f in parsed.flows), default=0.0))
    axes.set_xlim(0.0, end * 1.02 if end > 0 else 1.0)
    axes.set_xlabel("time (ms)")
    for rank in range(parsed.ranks - 1):
        axes.axhline(rank + 0.5, color="0.85", linewidth=0.8, zorder=0)
    title = (
        f"{len(parsed.calls)} calls, {len(parsed.epochs)} epochs, {len(parsed.waits)} waits, "
        f"{len(parsed.flows)} transfers on {parsed.ranks} rank{'s' if parsed.ranks != 1 else ''}"
    )
    if parsed.notes:
        title += "\n" + "; ".join(parsed.notes)
    axes.set_title(title, fontsize=10)
    if legend:
        axes.legend(handles=legend, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    _connect_hover(figure, axes, [(artist, texts) for _, artist, texts in sorted(hover, key=lambda h: h[0])])
    return figure


def _connect_hover(figure: Figure, axes: Any, hover: list[tuple[Any, list[str]]]) -> None:
    """Show the text of what is under the mouse, where the backend sends mouse events."""
    note = axes.annotate(
        "",
        xy=(0, 0),
        xytext=(12, 12),
        textcoords="offset points",
        fontsize=8,
        bbox={"boxstyle": "round", "facecolor": "lightyellow", "alpha": 0.95},
        zorder=10,
        visible=False,
        annotation_clip=False,
        gid=GIDS["hover"],
    )

    def on_move(event: Any) -> None:
        text = None
        if event.inaxes is axes:
            for artist, texts in hover:
                inside, info = artist.contains(event)
                if inside:
                    ind = info.get("ind", [0]) if isinstance(info, dict) else [0]
                    text = texts[int(ind[0])] if len(ind) else texts[0]
                    break
        if text is None:
            if note.get_visible():
                note.set_visible(False)
                figure.canvas.draw_idle()
            return
        note.xy = (event.xdata, event.ydata)
        note.set_text(text)
        note.set_visible(True)
        figure.canvas.draw_idle()

    figure.canvas.mpl_connect("motion_notify_event", on_move)


# ---- %%rma --timeline ----

# The recorder's module on a rank, reached without adding a name to the rank's namespace.
_RECORDING = "__import__('rma.trace.recording', fromlist=['start'])"


def require_matplotlib() -> None:
    """Raise before a cell runs if its timeline could not be drawn."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise RMAError("%%rma --timeline needs matplotlib: pip install matplotlib") from None


def start_recording(cluster: Cluster) -> None:
    """Clear every rank's records and record from now on (collective on the ranks)."""
    cluster.pull(f"{_RECORDING}.start(comm)")


def take_trace(cluster: Cluster) -> dict:
    """Stop recording, collect every rank's records of the cell, merge them into one trace and
    keep it as the last trace (what timeline() draws without an argument)."""
    global _last
    from ..trace.merge import merge

    # Stopped first: the cells that follow run unrecorded.
    parts = cluster.pull(f"({_RECORDING}.stop(), {_RECORDING}.take_part())[1]")
    _last = merge(parts)
    return _last


def show_figure(figure: Figure) -> None:
    """Show a figure under the cell's output: a figure of pyplot's as the backend shows its
    figures (a live canvas), another as an image."""
    if getattr(figure.canvas, "manager", None) is not None:
        import matplotlib

        if not matplotlib.is_interactive():  # interactive: pyplot shows it at the end of the cell
            figure.show()
        return
    try:
        from IPython.display import display
    except ImportError:
        return
    display(figure)
