"""Reading a trace file (docs/trace_format.md) into what its views show, per rank.

`python -m rma.trace`'s summary (summary.py) and its HTML page (html_page.py) read the file
through this module only, so that both see the same calls, waits, epochs and arrows: the
pairing of an epoch's `b` and `e` events and of a flow's `s` and `f` events is done once, here.
The reader keeps to what the format page promises and no more: it does not need the writer's
code, so that it also checks, by being a second reader, that the writer keeps that promise.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import load as load_file  # (the package's one reader of trace files)

FORMAT_VERSION = 1  # otherData.rma_trace of the files this reader knows
CALL_CATEGORIES = ("rma", "collective", "message")


class TraceError(Exception):
    """The file is not a trace this reader understands; the message says why, in one line."""


@dataclass(frozen=True)
class Slice:
    """A complete event (`"ph": "X"`): a call, a wait or an arrival; times in microseconds."""

    name: str
    cat: str
    start: float
    dur: float
    args: Mapping[str, Any]

    @property
    def end(self) -> float:
        return self.start + self.dur


@dataclass(frozen=True)
class Epoch:
    """An epoch span, its `b` and `e` events paired by id; `closed` is False when the file had
    no `e` (then it ends at the rank's last record, as the writer would have ended it)."""

    id: str
    name: str
    start: float
    end: float
    args: Mapping[str, Any]
    closed: bool = True

    @property
    def dur(self) -> float:
        return self.end - self.start

    @property
    def kind(self) -> str:
        return str(self.args.get("kind", self.name.split(" ")[0]))

    @property
    def site(self) -> str:
        return str(self.args.get("site", "?"))


@dataclass(frozen=True)
class Mark:
    """An instant event (`"ph": "i"`): an error, or the note of records a rank dropped."""

    name: str
    cat: str
    ts: float
    args: Mapping[str, Any]


@dataclass(frozen=True)
class Flow:
    """A data call's arrow: from its start on the origin's calls track to its arrival on the
    target's arrivals track."""

    id: str
    name: str
    origin: int
    start: float
    target: int
    end: float


@dataclass
class Track:
    """What one rank recorded, each list in time order."""

    rank: int
    host: str | None = None
    calls: list[Slice] = field(default_factory=list)
    waits: list[Slice] = field(default_factory=list)
    arrivals: list[Slice] = field(default_factory=list)
    epochs: list[Epoch] = field(default_factory=list)
    errors: list[Mark] = field(default_factory=list)
    notes: list[Mark] = field(default_factory=list)  # other instant events (dropped records)
    last: float = 0.0  # the end of its last record

    @property
    def label(self) -> str:
        return f"rank {self.rank} ({self.host})" if self.host else f"rank {self.rank}"


@dataclass
class Trace:
    """A whole job's trace: one track per rank of the job (a missing rank's stays empty)."""

    tracks: list[Track]
    flows: list[Flow]
    unpaired_flows: int  # arrows with one end only (a rank's oldest records dropped, say)
    dropped: dict[int, int]
    capacity: int | None
    missing_ranks: list[int]
    end: float  # the end of the job's last record, in microseconds since its first

    @property
    def hosts(self) -> list[str]:
        return sorted({t.host for t in self.tracks if t.host})


def load(path: str | Path) -> Trace:
    """Read the trace file at `path` (or merge its parts); TraceError if it is not one (OSError if
    it cannot be read, FileNotFoundError if neither it nor parts are there)."""
    try:
        obj = load_file(path)  # (merging the ranks' parts first if only they are there)
    except (ValueError, UnicodeDecodeError, EOFError) as exc:  # (JSONDecodeError, a cut gzip stream)
        raise TraceError(f"not JSON ({exc})") from None
    except (KeyError, TypeError) as exc:  # (a part that is not one)
        raise TraceError(f"its parts do not merge ({exc!r})") from None
    return read(obj)


def read(obj: Any) -> Trace:
    """Read a trace already parsed from JSON; TraceError if it is not one."""
    if not isinstance(obj, dict) or not isinstance(obj.get("traceEvents"), list):
        raise TraceError("no traceEvents list: not a trace in the Chrome trace event format")
    other = obj.get("otherData") or {}
    if not isinstance(other, dict):
        raise TraceError("otherData is not an object")
    version = other.get("rma_trace", FORMAT_VERSION)
    if version != FORMAT_VERSION:
        raise TraceError(f"trace format {version!r}; this reader knows {FORMAT_VERSION} (a newer rma wrote it?)")
    events = [_checked(i, e) for i, e in enumerate(obj["traceEvents"])]
    size = max([_int(other.get("ranks"), 0)] + [e["pid"] + 1 for e in events if isinstance(e.get("pid"), int)])
    hosts = {_int(r, -1): str(h) for r, h in _dict(other.get("hosts")).items()}
    tracks = [Track(rank, hosts.get(rank)) for rank in range(size)]
    opened: dict[str, tuple[int, dict[str, Any]]] = {}
    flow_starts: dict[str, tuple[int, dict[str, Any]]] = {}
    flow_ends: dict[str, tuple[int, dict[str, Any]]] = {}
    for e in events:
        pid, ph, cat = e.get("pid"), e["ph"], e.get("cat", "")
        if not isinstance(pid, int) or pid < 0:
            continue  # metadata of the whole trace, if any: no rank's
        track = tracks[pid]
        track.last = max(track.last, e.get("ts", 0.0) + e.get("dur", 0.0))
        if ph == "X":
            piece = Slice(e.get("name", "?"), cat, e["ts"], e["dur"], _dict(e.get("args")))
            if cat in CALL_CATEGORIES:
                track.calls.append(piece)
            elif cat == "wait":
                track.waits.append(piece)
            elif cat == "arrival":
                track.arrivals.append(piece)
        elif ph == "b" and cat == "epoch":
            opened[str(e.get("id"))] = (pid, e)
        elif ph == "e" and cat == "epoch" and (begun := opened.pop(str(e.get("id")), None)) is not None:
            track = tracks[begun[0]]
            track.epochs.append(_epoch(begun[1], e["ts"], closed=True))
        elif ph == "i":
            mark = Mark(e.get("name", "?"), cat, e["ts"], _dict(e.get("args")))
            (track.errors if cat == "error" else track.notes).append(mark)
        elif ph == "s":
            flow_starts[str(e.get("id"))] = (pid, e)
        elif ph == "f":
            flow_ends[str(e.get("id"))] = (pid, e)
    for pid, b in opened.values():  # never ended: it ends where its rank's records do
        tracks[pid].epochs.append(_epoch(b, max(tracks[pid].last, b["ts"]), closed=False))
    flows = [
        Flow(key, s.get("name", "?"), origin, s["ts"], flow_ends[key][0], flow_ends[key][1]["ts"])
        for key, (origin, s) in flow_starts.items()
        if key in flow_ends
    ]
    for track in tracks:
        for events_of_a_kind in (track.calls, track.waits, track.arrivals, track.epochs):
            events_of_a_kind.sort(key=lambda x: x.start)
    return Trace(
        tracks=tracks,
        flows=sorted(flows, key=lambda f: f.start),
        unpaired_flows=len(flow_starts.keys() ^ flow_ends.keys()),
        dropped={_int(r, -1): _int(n, 0) for r, n in _dict(other.get("dropped")).items()},
        capacity=other.get("capacity") if isinstance(other.get("capacity"), int) else None,
        missing_ranks=sorted(r for r in other.get("missing_ranks") or [] if isinstance(r, int)),
        end=max([t.last for t in tracks], default=0.0),
    )


def _checked(index: int, event: Any) -> dict[str, Any]:
    """The event, if it has what its phase needs (a bad one names itself: the file is broken)."""
    if not isinstance(event, dict) or not isinstance(event.get("ph"), str):
        raise TraceError(f"traceEvents[{index}] is not an event (no ph)")
    needs = {"X": ("ts", "dur"), "b": ("ts",), "e": ("ts",), "i": ("ts",), "s": ("ts",), "f": ("ts",)}
    for key in needs.get(event["ph"], ()):
        if not isinstance(event.get(key), (int, float)) or isinstance(event.get(key), bool):
            raise TraceError(f"traceEvents[{index}] ({event['ph']!r} {event.get('name', '?')!r}) has no number {key}")
    return event


def _epoch(begin: dict[str, Any], end: float, *, closed: bool) -> Epoch:
    return Epoch(str(begin.get("id")), begin.get("name", "?"), begin["ts"], end, _dict(begin.get("args")), closed)


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _int(value: Any, default: int) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default
