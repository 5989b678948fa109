"""The HTML page of a trace (`python -m rma.trace FILE --html OUT.html`): the job's timeline as one
inline SVG, in a page that needs nothing else (no network, no script), so that it opens from a
mail or a CI artifact as it is.

One row per rank (`g.rank-row`), time running right. In a row, from the top: the rank's calls
as ticks (`rect.call`), its epochs as bars coloured by kind (`rect.epoch`, stacked in lanes when
they overlap: epochs of several windows), and where other ranks' operations completed at it
(`rect.arrival`); its waits shade the row (`rect.wait`), its errors are red triangles
(`path.error`). An arrow (`path.flow`) runs from each data call to its arrival on the target's
row. Every element carries its details as an SVG <title>, which browsers show on hover. The
class names are the page's interface: the tests count them in the rendered page.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from html import escape

from .reading import Epoch, Flow, Mark, Slice, Trace, Track
from .summary import duration, ranks_text, render

LABEL = 150  # px, the column of rank names
RIGHT = 40  # px right of the plot: room for the last time's label
BOTTOM = 8
AXIS = 28  # px above the first row: the time axis
CALL_LANE = 14
EPOCH_LANE = 12
ARRIVAL_LANE = 8
PAD = 5
MAX_LANES = 6  # epochs overlapping more deeply share the last lane

# One colour per epoch kind (docs/trace_format.md's kinds), told apart by colour-blind readers too
# (Okabe and Ito's palette).
KIND_COLOURS = {
    "fence": "#0072B2",
    "access": "#E69F00",
    "exposure": "#009E73",
    "lock": "#D55E00",
    "lock_all": "#CC79A7",
}
OTHER_KIND = "#999999"

# The time scale: microseconds since the job's first record -> x in the SVG.
_Scale = Callable[[float], float]

STYLE = """
body { font: 13px sans-serif; margin: 16px; color: #222; }
.scroll { overflow-x: auto; border: 1px solid #ddd; }
svg text { font: 11px sans-serif; fill: #222; }
.rank-row > rect.band { fill: #f7f7f7; }
.rank-row:nth-of-type(even) > rect.band { fill: #efefef; }
rect.call { fill: #333; }
rect.call.collective { fill: #56B4E9; }
rect.wait { fill: #000; fill-opacity: 0.12; }
rect.epoch { fill-opacity: 0.75; stroke: #fff; stroke-width: 0.5; }
rect.epoch.open { stroke: #000; stroke-dasharray: 3 2; }
rect.arrival { fill: #777; }
path.flow { stroke: #444; stroke-width: 0.7; stroke-opacity: 0.45; fill: none; }
path.flow:hover, rect:hover { stroke: #000; stroke-opacity: 1; stroke-width: 1.5; }
path.error { fill: #d00; }
line.tick { stroke: #ccc; }
.legend span { display: inline-block; margin-right: 14px; }
.legend i { display: inline-block; width: 18px; height: 10px; margin-right: 4px; vertical-align: middle; }
pre { font-size: 12px; }
"""


def page(trace: Trace, name: str = "trace", top: int = 5) -> str:
    """The page: a title, a legend, the timeline and the terminal summary below it."""
    svg = timeline(trace)
    kinds = sorted({e.kind for t in trace.tracks for e in t.epochs}) or list(KIND_COLOURS)
    legend = "".join(
        f'<span><i style="background:{KIND_COLOURS.get(k, OTHER_KIND)}"></i>{escape(k)} epoch</span>' for k in kinds
    )
    legend += (
        '<span><i style="background:#333"></i>call</span>'
        '<span><i style="background:#56B4E9"></i>collective</span>'
        '<span><i style="background:rgba(0,0,0,.12)"></i>waiting</span>'
        '<span><i style="background:#777;height:5px"></i>arrival</span>'
        "<span>&#8594; data call to its arrival</span>"
    )
    return (
        "<!DOCTYPE html>\n"
        f'<html lang="en"><head><meta charset="utf-8"><title>{escape(name)}: rma trace</title>'
        f"<style>{STYLE}</style></head>\n<body>\n"
        f"<h1>{escape(name)}</h1>\n"
        f'<p class="legend">{legend}</p>\n'
        f'<div class="scroll">{svg}</div>\n'
        "<p>Hover over a bar, tick or arrow for its details.</p>\n"
        f"<pre>{escape(render(trace, top, name))}</pre>\n"
        "</body></html>\n"
    )


def plot_width(trace: Trace) -> int:
    """Wide enough that a busy rank's calls do not all merge (3 px a call), and no wider than a
    browser draws well."""
    busiest = max((len(t.calls) for t in trace.tracks), default=0)
    return min(max(900, 3 * busiest), 16000)


def timeline(trace: Trace) -> str:
    """The timeline as one <svg> element."""
    width = plot_width(trace)
    span = trace.end if trace.end > 0 else 1.0

    def x(ts: float) -> float:
        return round(LABEL + width * ts / span, 2)

    rows: list[str] = []
    anchors: dict[int, tuple[float, float]] = {}  # rank -> y of its calls lane, y of its arrivals lane
    y = AXIS
    for track in trace.tracks:
        lanes = _lanes(track.epochs)
        height = PAD + CALL_LANE + PAD + EPOCH_LANE * max(len(set(lanes)), 1) + PAD + ARRIVAL_LANE + PAD
        anchors[track.rank] = (y + PAD + CALL_LANE / 2, y + height - PAD - ARRIVAL_LANE / 2)
        rows.append(_row(track, trace, lanes, y, height, x))
        y += height
    arrows = [_arrow(flow, anchors, x) for flow in trace.flows if flow.origin in anchors and flow.target in anchors]
    total_width = LABEL + width + RIGHT
    total_height = y + BOTTOM
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="timeline" width="{total_width}" height="{total_height}" '
        f'viewBox="0 0 {total_width} {total_height}">'
        '<defs><marker id="arrowhead" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="5" markerHeight="5" '
        'markerUnits="userSpaceOnUse" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="#555"/></marker></defs>'
        + _axis(span, width, total_height, x)
        + "".join(rows)
        + '<g class="flows">'
        + "".join(arrows)
        + "</g></svg>"
    )


def _lanes(epochs: list[Epoch]) -> list[int]:
    """Each epoch's lane (epochs in start order): the first whose last epoch has ended, so that
    overlapping epochs (of several windows, or a lock inside a lock_all's time) stay visible."""
    ends: list[float] = []
    lanes = []
    for epoch in epochs:
        lane = next((i for i, end in enumerate(ends) if end <= epoch.start), len(ends))
        lane = min(lane, MAX_LANES - 1)
        if lane == len(ends):
            ends.append(epoch.end)
        else:
            ends[lane] = max(ends[lane], epoch.end)
        lanes.append(lane)
    return lanes


def _row(track: Track, trace: Trace, lanes: list[int], y: float, height: float, x: _Scale) -> str:
    label = track.label + (": missing" if track.rank in trace.missing_ranks else "")
    parts = [
        f'<g class="rank-row" data-rank="{track.rank}">',
        f'<rect class="band" x="0" y="{y}" width="{LABEL + plot_width(trace)}" height="{height}"/>',
        f'<text x="6" y="{y + height / 2 + 4}">{escape(label)}</text>',
    ]
    parts += (_wait(w, y, height, x) for w in track.waits)
    calls_y = y + PAD
    parts += (_call(c, calls_y, x) for c in track.calls)
    epochs_y = calls_y + CALL_LANE + PAD
    parts += (_epoch(e, epochs_y + EPOCH_LANE * lane, x) for e, lane in zip(track.epochs, lanes))
    arrivals_y = y + height - PAD - ARRIVAL_LANE
    parts += (_arrival(a, arrivals_y, x) for a in track.arrivals)
    parts += (_error(m, calls_y, x) for m in track.errors)
    parts.append("</g>")
    return "".join(parts)


def _rect(cls: str, x0: float, x1: float, y: float, height: float, title: str, least: float = 1.0) -> str:
    """A rect of at least `least` px wide, so that a short call stays visible."""
    return (
        f'<rect class="{cls}" x="{x0}" y="{round(y, 2)}" width="{round(max(x1 - x0, least), 2)}" '
        f'height="{height}"><title>{escape(title)}</title></rect>'
    )


def _call(call: Slice, y: float, x: _Scale) -> str:
    details = [call.name]
    args = call.args
    if "target" in args:
        details.append(f"target {args['target']}")
    if "bytes" in args:
        details.append(f"{args['bytes']} B")
    if "window" in args:
        details.append(f"window {args['window']}")
    if "comm" in args:
        details.append(f"comm {args['comm']}")
    details += [str(args.get("site", "?")), f"{duration(call.dur)} at {duration(call.start)}"]
    return _rect(f"call {call.cat}", x(call.start), x(call.end), y, CALL_LANE, ", ".join(details))


def _wait(wait: Slice, y: float, height: float, x: _Scale) -> str:
    ranks = wait.args.get("ranks")
    whom = ranks_text(r for r in ranks if isinstance(r, int)) if isinstance(ranks, list) else "?"
    title = f"waited {duration(wait.dur)} for {whom}, at {duration(wait.start)}"
    return _rect("wait", x(wait.start), x(wait.end), y, height, title)


def _epoch(epoch: Epoch, y: float, x: _Scale) -> str:
    colour = KIND_COLOURS.get(epoch.kind, OTHER_KIND)
    window = f", window {epoch.args['window']}" if "window" in epoch.args else ""
    closing = "" if epoch.closed else " (never closed: ends at the rank's last record)"
    title = f"{epoch.name}{window}, opened at {epoch.site}, {duration(epoch.dur)}{closing}"
    cls = f"epoch kind-{epoch.kind}" + ("" if epoch.closed else " open")
    rect = _rect(cls, x(epoch.start), x(epoch.end), y + 1, EPOCH_LANE - 2, title, least=2.0)
    return rect.replace("<rect ", f'<rect style="fill:{colour}" ', 1)


def _arrival(arrival: Slice, y: float, x: _Scale) -> str:
    args = arrival.args
    title = f"{arrival.name}, {args.get('bytes', '?')} B, completed by {args.get('completed_by', '?')}"
    return _rect("arrival", x(arrival.start), x(arrival.end), y, ARRIVAL_LANE, title)


def _error(mark: Mark, y: float, x: _Scale) -> str:
    at = x(mark.ts)
    message = mark.args.get("message", "")
    return (
        f'<path class="error" d="M{at},{y} l-6,{CALL_LANE} h12 z">'
        f"<title>{escape(f'{mark.name}: {message}')}</title></path>"
    )


def _arrow(flow: Flow, anchors: dict[int, tuple[float, float]], x: _Scale) -> str:
    x0, y0, x1, y1 = x(flow.start), anchors[flow.origin][0], x(flow.end), anchors[flow.target][1]
    title = f"{flow.name}: rank {flow.origin} to rank {flow.target}, arrived {duration(flow.end - flow.start)} later"
    return (
        f'<path class="flow" d="M{x0},{y0} L{x1},{y1}" marker-end="url(#arrowhead)">'
        f"<title>{escape(title)}</title></path>"
    )


def _axis(span: float, width: int, height: float, x: _Scale) -> str:
    """Vertical grid lines with their times, at a round step giving 5-10 of them."""
    step = 10.0 ** math.floor(math.log10(span / 5)) if span > 0 else 1.0
    for factor in (1, 2, 5, 10):
        if span / (step * factor) <= 10:
            step *= factor
            break
    parts = ['<g class="axis">']
    for tick in _ticks(span, step):
        parts.append(f'<line class="tick" x1="{x(tick)}" y1="{AXIS - 6}" x2="{x(tick)}" y2="{height - BOTTOM}"/>')
        parts.append(f'<text x="{x(tick) + 2}" y="{AXIS - 10}">{escape(duration(tick))}</text>')
    parts.append("</g>")
    return "".join(parts)


def _ticks(span: float, step: float) -> Iterable[float]:
    tick = 0.0
    while tick <= span:
        yield tick
        tick += step
