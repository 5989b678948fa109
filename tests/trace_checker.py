"""An independent reader of rma's trace files: checks one against docs/trace_format.md and the
Chrome trace event format (the phases' required fields, slices that nest, async spans and flows
whose ends exist) and returns what it holds as plain facts (calls, waits, epochs, arrivals,
flows and errors per rank) for tests to assert on.

Written from those two documents alone: it imports nothing of rma, so that a mistake shared by
the writer and its reader cannot hide (a test of the recorder through its own reader would pass
whatever the two agreed on).

    facts = check(json.load(open(path)))   # raises TraceError listing every problem found
    facts.data_calls(rank=1, name="put")
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "TraceError",
    "Call",
    "Wait",
    "Epoch",
    "Arrival",
    "Flow",
    "Instant",
    "Facts",
    "check",
    "check_file",
    "DATA_CALLS",
]

# Times are microseconds rounded to the nanosecond, `ts` and `dur` each on its own: an end
# (ts + dur) may stand a rounding step or two off the times it is compared with.
EPS = 0.002

# The window calls that move data (docs/trace_format.md, "Calls"): each has a target, bytes, a
# flow and an arrival.
DATA_CALLS = frozenset(
    {
        "put",
        "get",
        "accumulate",
        "get_accumulate",
        "fetch_and_op",
        "compare_and_swap",
        "rput",
        "rget",
        "raccumulate",
        "rget_accumulate",
    }
)
# Calls that name a target besides the data calls.
_TARGETED = frozenset({"lock", "unlock", "flush", "flush_local"})
_EPOCH_KINDS = ("fence", "access", "exposure", "lock", "lock_all")
# Chrome's metadata events, and the argument each one carries.
_METADATA = {
    "process_name": "name",
    "process_labels": "labels",
    "process_sort_index": "sort_index",
    "thread_name": "name",
    "thread_sort_index": "sort_index",
}
_SITE = re.compile(r".+:\d+")


class TraceError(AssertionError):
    """The trace breaks the format; `problems` lists every breach found (the message the first
    ones)."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        shown = "\n  ".join(problems[:30])
        more = f"\n  ... and {len(problems) - 30} more" if len(problems) > 30 else ""
        super().__init__(f"the trace breaks its format in {len(problems)} place(s):\n  {shown}{more}")


@dataclass(frozen=True)
class Call:
    """A call slice ("X" on a calls track, cat "rma", "collective" or "message")."""

    rank: int
    name: str
    cat: str
    ts: float
    end: float
    args: dict[str, Any] = field(hash=False, compare=False)

    @property
    def window(self) -> int | None:
        return self.args.get("window")

    @property
    def target(self) -> int | None:
        return self.args.get("target")

    @property
    def site(self) -> str | None:
        return self.args.get("site")

    @property
    def bytes(self) -> int | None:
        return self.args.get("bytes")


@dataclass(frozen=True)
class Wait:
    """A wait slice, inside `call` (the slice that encloses it)."""

    rank: int
    ts: float
    end: float
    ranks: tuple[int, ...]
    call: Call | None


@dataclass(frozen=True)
class Epoch:
    """An epoch: a "b"/"e" pair of cat "epoch", with the b event's args."""

    rank: int
    id: str
    name: str
    ts: float
    end: float
    window: int
    kind: str
    ranks: tuple[int, ...]
    site: str

    def holds(self, call: Call) -> bool:
        """Whether call lies wholly inside this epoch, on its rank and window."""
        return (
            call.rank == self.rank
            and call.window == self.window
            and self.ts - EPS <= call.ts
            and call.end <= self.end + EPS
        )


@dataclass(frozen=True)
class Arrival:
    """An arrival slice ("X" on the target's tid 1, cat "arrival")."""

    rank: int  # the target
    ts: float
    end: float
    origin: int
    call: str
    bytes: int
    window: int
    completed_by: str


@dataclass(frozen=True)
class Flow:
    """A flow ("s" on the origin's tid 0, "f" on the target's tid 1, the same id), with the
    call its start lies on and the arrival its finish lies in."""

    id: int
    name: str
    origin: int
    target: int
    start: float
    finish: float
    call: Call
    arrival: Arrival


@dataclass(frozen=True)
class Instant:
    """An instant event ("i")."""

    rank: int
    name: str
    cat: str
    ts: float
    args: dict[str, Any] = field(hash=False, compare=False)


@dataclass
class Facts:
    """What a trace that passed the checks holds, per rank (lists in time order)."""

    ranks: int
    hosts: dict[int, str]
    clock_offsets_us: dict[int, float]
    dropped: dict[int, int]
    capacity: int
    missing_ranks: list[int]
    process_names: dict[int, str]
    calls: dict[int, list[Call]]
    waits: dict[int, list[Wait]]
    epochs: dict[int, list[Epoch]]
    arrivals: dict[int, list[Arrival]]
    errors: dict[int, list[Instant]]
    instants: dict[int, list[Instant]]
    flows: list[Flow]

    def data_calls(self, rank: int | None = None, name: str | None = None, window: int | None = None) -> list[Call]:
        """The data calls (DATA_CALLS), of one rank, call name or window if given."""
        return [
            call
            for r, calls in sorted(self.calls.items())
            if rank is None or r == rank
            for call in calls
            if call.name in DATA_CALLS
            and (name is None or call.name == name)
            and (window is None or call.window == window)
        ]


def check_file(path) -> Facts:
    """check() of the JSON file at path."""
    import json

    with open(path, encoding="utf-8") as f:
        return check(json.load(f))


def check(trace: Any) -> Facts:
    """Check trace (a parsed JSON object) against the format; return its facts, or raise
    TraceError naming every problem."""
    problems: list[str] = []
    facts = _Reader(trace, problems).read()
    if problems:
        raise TraceError(problems)
    assert facts is not None
    return facts


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _rank_list(value: Any, ranks: int) -> bool:
    return isinstance(value, list) and all(_whole(r) and 0 <= r < ranks for r in value)


class _Reader:
    def __init__(self, trace: Any, problems: list[str]):
        self.trace = trace
        self.problems = problems
        self.ranks = 0

    def fail(self, where: Any, problem: str) -> None:
        self.problems.append(f"{problem}: {where!r}"[:400])

    # -- the object -----------------------------------------------------------------------

    def read(self) -> Facts | None:
        trace = self.trace
        if not isinstance(trace, dict) or not isinstance(trace.get("traceEvents"), list):
            self.fail(type(trace).__name__, "not a JSON object with a traceEvents list")
            return None
        if trace.get("displayTimeUnit", "ms") not in ("ms", "ns"):
            self.fail(trace.get("displayTimeUnit"), "displayTimeUnit is neither ms nor ns")
        other = self.other_data(trace.get("otherData"))
        if other is None:
            return None
        events = [e for e in trace["traceEvents"] if self.fields(e)]
        if self.problems:  # (what follows reads fields the checks above found missing)
            return None
        return self.facts(other, events)

    def other_data(self, other: Any) -> dict[str, Any] | None:
        if not isinstance(other, dict):
            self.fail(other, "otherData is not an object")
            return None
        if other.get("rma_trace") != 1:
            self.fail(other.get("rma_trace"), "otherData.rma_trace is not 1")
        ranks = other.get("ranks")
        if not (_whole(ranks) and ranks >= 1):
            self.fail(ranks, "otherData.ranks is not a positive whole number")
            return None
        self.ranks = ranks
        missing = other.get("missing_ranks")
        if not _rank_list(missing, ranks) or len(set(missing)) != len(missing):
            self.fail(missing, "otherData.missing_ranks is not a list of distinct ranks")
            return None
        # (The format page: the maps have an entry for every rank with records, none for a
        # missing rank.)
        keys = {str(r) for r in range(ranks) if r not in missing}
        for name, valid in (
            ("hosts", lambda v: isinstance(v, str) and v != ""),
            ("clock_offsets_us", _number),
            ("clock_errors_us", lambda v: _number(v) and v >= 0),
            ("dropped", lambda v: _whole(v) and v >= 0),
        ):
            table = other.get(name)
            if not isinstance(table, dict) or set(table) != keys:
                self.fail(table, f"otherData.{name} does not have one entry per rank with records")
                return None
            for key, value in table.items():
                if not valid(value):
                    self.fail((key, value), f"otherData.{name} has a bad value")
        if other["clock_offsets_us"].get("0", 0) != 0 or other["clock_errors_us"].get("0", 0) != 0:
            self.fail(
                other["clock_offsets_us"].get("0"), "rank 0's clock offset is not exactly 0 (the others align to it)"
            )
        if not (_whole(other.get("capacity")) and other["capacity"] >= 1):
            self.fail(other.get("capacity"), "otherData.capacity is not a positive whole number")
        return other

    # -- each event's own fields (Chrome's format, then rma's placement) -------------------

    def fields(self, e: Any) -> bool:
        """Whether e has the fields its phase needs (the problems are noted)."""
        if not isinstance(e, dict):
            self.fail(e, "an event is not an object")
            return False
        ph = e.get("ph")
        if ph not in ("X", "b", "e", "s", "f", "i", "M"):
            self.fail(e, "unknown or missing phase")
            return False
        ok = True
        if not isinstance(e.get("name"), str) or not e["name"]:
            self.fail(e, "no name")
            ok = False
        if not (_whole(e.get("pid")) and 0 <= e["pid"] < self.ranks):
            self.fail(e, "pid is not a rank of the job")
            ok = False
        if ph == "M":
            return self.metadata_fields(e) and ok
        if not (_whole(e.get("tid")) and e["tid"] >= 0):
            self.fail(e, "tid is not 0 (calls), 1 (arrivals) or 2 and up (other threads' calls)")
            ok = False
        if not (_number(e.get("ts")) and e["ts"] >= 0):
            self.fail(e, "ts is not a number >= 0")
            ok = False
        if not isinstance(e.get("cat"), str):
            self.fail(e, "no cat")
            ok = False
        if not ok:
            return False
        if ph == "X":
            return self.slice_fields(e)
        if ph in ("b", "e"):
            return self.async_fields(e)
        if ph in ("s", "f"):
            return self.flow_fields(e)
        return self.instant_fields(e)

    def metadata_fields(self, e: dict[str, Any]) -> bool:
        key = _METADATA.get(e["name"])
        args = e.get("args")
        if key is None:
            self.fail(e, "unknown metadata event")
            return False
        if not isinstance(args, dict) or key not in args:
            self.fail(e, f"metadata event without args.{key}")
            return False
        if key == "sort_index" and not _whole(args[key]):
            self.fail(e, "sort_index is not a whole number")
            return False
        if e["name"].startswith("thread_") and not _whole(e.get("tid")):
            self.fail(e, "thread metadata without a tid")
            return False
        return True

    def slice_fields(self, e: dict[str, Any]) -> bool:
        if not (_number(e.get("dur")) and e["dur"] >= 0):
            self.fail(e, "X event without a dur >= 0")
            return False
        cat, args = e["cat"], e.get("args")
        if cat not in ("rma", "collective", "message", "wait", "arrival"):
            self.fail(e, "X event of an unknown cat")
            return False
        if (e["tid"] == 1) != (cat == "arrival"):
            self.fail(e, f"a {cat} slice on the wrong thread")
            return False
        if not isinstance(args, dict):
            self.fail(e, f"a {cat} slice without args")
            return False
        if cat == "wait":
            ranks = args.get("ranks")
            if not _rank_list(ranks, self.ranks) or e["pid"] in ranks:
                self.fail(e, "a wait whose args.ranks are not other ranks of the job")
                return False
            if e["name"] != ("wait for " + ", ".join(map(str, ranks)) if ranks else "wait"):
                self.fail(e, "a wait whose name does not list its args.ranks ('wait' for none)")
                return False
            return True
        if cat == "arrival":
            return self.arrival_fields(e, args)
        return self.call_fields(e, args)

    def call_fields(self, e: dict[str, Any], args: dict[str, Any]) -> bool:
        name, ok = e["name"], True
        if not (isinstance(args.get("site"), str) and (args["site"] == "?" or _SITE.fullmatch(args["site"]))):
            self.fail(e, "a call without args.site FILE:LINE (or ?: no frame of the program's)")
            ok = False
        if e["cat"] == "rma":
            if not _whole(args.get("window")):
                self.fail(e, "a window's call without args.window")
                ok = False
        elif "window" in args or ("comm" not in args and name != "request.wait"):
            self.fail(e, "a collective or message without args.comm (or with a window)")
            ok = False
        if e["cat"] == "message":  # (its peer, where known: a receive from any source may say none)
            if "target" in args and not (_whole(args["target"]) and 0 <= args["target"] < self.ranks):
                self.fail(e, "a message whose args.target is not a rank of the job")
                ok = False
            if not (_whole(args.get("bytes")) and args["bytes"] >= 0):
                self.fail(e, "a message without args.bytes")
                ok = False
            return ok
        targeted = name in DATA_CALLS or name in _TARGETED
        if targeted and not (_whole(args.get("target")) and 0 <= args["target"] < self.ranks):
            self.fail(e, "a targeted call whose args.target is not a rank of the job")
            ok = False
        if not targeted and "target" in args:
            self.fail(e, "args.target on a call that has no target")
            ok = False
        if (name in DATA_CALLS or e["cat"] == "collective") and not (_whole(args.get("bytes")) and args["bytes"] >= 0):
            self.fail(e, "a data call or collective without args.bytes")
            ok = False
        return ok

    def arrival_fields(self, e: dict[str, Any], args: dict[str, Any]) -> bool:
        origin, call = args.get("from"), args.get("call")
        if not (_whole(origin) and 0 <= origin < self.ranks) or call not in DATA_CALLS:
            self.fail(e, "an arrival without args.from (a rank) and args.call (a data call)")
            return False
        if e["name"] != f"{call} from {origin}":
            self.fail(e, "an arrival whose name is not 'CALL from RANK' of its args")
            return False
        completed_by = args.get("completed_by")
        if not (
            _whole(args.get("bytes"))
            and _whole(args.get("window"))
            and (completed_by is None or isinstance(completed_by, str))
        ):
            self.fail(e, "an arrival without args.bytes, window and completed_by (a call's name, or null)")
            return False
        return True

    def async_fields(self, e: dict[str, Any]) -> bool:
        if not isinstance(e.get("id"), str) or not e["id"]:
            self.fail(e, "an async event without a string id")
            return False
        if e["cat"] != "epoch" or e["tid"] != 0:
            self.fail(e, "an async event that is not an epoch on tid 0")
            return False
        if e["ph"] == "e":
            return True
        args = e.get("args")
        if not isinstance(args, dict):
            self.fail(e, "an epoch's b event without args")
            return False
        kind, ranks = args.get("kind"), args.get("ranks")
        if (
            kind not in _EPOCH_KINDS
            or not _whole(args.get("window"))
            or not _rank_list(ranks, self.ranks)
            or not (args.get("site") is None or (isinstance(args["site"], str) and _SITE.fullmatch(args["site"])))
        ):
            self.fail(e, "an epoch without args.window, kind, ranks and site (FILE:LINE, or null)")
            return False
        if e["name"] not in _epoch_names(kind, ranks):
            self.fail(
                e, f"an epoch's name does not say its kind and ranks (expected one of {_epoch_names(kind, ranks)})"
            )
            return False
        if kind in ("fence", "lock_all") and ranks != list(range(self.ranks)):
            self.fail(e, f"a {kind} epoch whose ranks are not every rank")
            return False
        if kind == "lock" and len(ranks) != 1:
            self.fail(e, "a lock epoch whose ranks are not its one target")
            return False
        return True

    def flow_fields(self, e: dict[str, Any]) -> bool:
        if not _whole(e.get("id")):
            self.fail(e, "a flow event without a numeric id")
            return False
        if e["cat"] != "flow":
            self.fail(e, "a flow event whose cat is not flow")
            return False
        if e["ph"] == "f" and e.get("bp") != "e":
            self.fail(e, 'a flow end without "bp": "e"')
            return False
        if e["tid"] != (0 if e["ph"] == "s" else 1):
            self.fail(e, "a flow end on the wrong thread")
            return False
        return True

    def instant_fields(self, e: dict[str, Any]) -> bool:
        if e.get("s") not in ("g", "p", "t"):
            self.fail(e, "an instant event without a scope s of g, p or t")
            return False
        if e["tid"] == 1:
            self.fail(e, "an instant event on the arrivals track (tid 1)")
            return False
        if e["cat"] == "error" and not isinstance((e.get("args") or {}).get("message"), str):
            self.fail(e, "an error without args.message")
            return False
        return True

    # -- across events ----------------------------------------------------------------------

    def facts(self, other: dict[str, Any], events: list[dict[str, Any]]) -> Facts:
        ranks = self.ranks
        hosts = {int(r): h for r, h in other["hosts"].items()}
        dropped = {int(r): n for r, n in other["dropped"].items()}
        timed = [e for e in events if e["ph"] != "M"]
        if timed and abs(min(e["ts"] for e in timed)) > EPS:
            self.fail(min(e["ts"] for e in timed), "the earliest event's ts is not 0")
        names = self.metadata(events, hosts)

        slices: dict[tuple[int, int], list[dict[str, Any]]] = defaultdict(list)
        for e in events:
            if e["ph"] == "X":
                slices[(e["pid"], e["tid"])].append(e)
        parents = {}
        for track, track_slices in slices.items():
            parents.update(self.nesting(track, track_slices))

        calls: dict[int, list[Call]] = {r: [] for r in range(ranks)}
        call_of: dict[int, Call] = {}
        waits: dict[int, list[Wait]] = {r: [] for r in range(ranks)}
        arrivals: dict[int, list[Arrival]] = {r: [] for r in range(ranks)}
        for e in sorted((e for e in events if e["ph"] == "X"), key=lambda e: (e["ts"], -e["dur"])):
            end = e["ts"] + e["dur"]
            if e["cat"] in ("rma", "collective", "message"):
                call = Call(e["pid"], e["name"], e["cat"], e["ts"], end, e["args"])
                calls[e["pid"]].append(call)
                call_of[id(e)] = call
        for e in sorted((e for e in events if e["ph"] == "X"), key=lambda e: (e["ts"], -e["dur"])):
            end, args = e["ts"] + e["dur"], e["args"]
            if e["cat"] == "wait":
                parent = parents.get(id(e))
                call = call_of.get(id(parent)) if parent is not None else None
                if call is None:
                    self.fail(e, "a wait that no call encloses")
                waits[e["pid"]].append(Wait(e["pid"], e["ts"], end, tuple(args["ranks"]), call))
            elif e["cat"] == "arrival":
                arrivals[e["pid"]].append(
                    Arrival(
                        e["pid"],
                        e["ts"],
                        end,
                        args["from"],
                        args["call"],
                        args["bytes"],
                        args["window"],
                        args["completed_by"],
                    )
                )

        epochs = self.epochs(events)
        flows = self.flows(events, calls, arrivals)

        errors: dict[int, list[Instant]] = {r: [] for r in range(ranks)}
        instants: dict[int, list[Instant]] = {r: [] for r in range(ranks)}
        for e in sorted((e for e in events if e["ph"] == "i"), key=lambda e: e["ts"]):
            instant = Instant(e["pid"], e["name"], e["cat"], e["ts"], e.get("args") or {})
            instants[e["pid"]].append(instant)
            if e["cat"] == "error":
                errors[e["pid"]].append(instant)
        self.dropped_notes(dropped, instants, timed)

        return Facts(
            ranks=ranks,
            hosts=hosts,
            clock_offsets_us={int(r): v for r, v in other["clock_offsets_us"].items()},
            dropped=dropped,
            capacity=other["capacity"],
            missing_ranks=list(other["missing_ranks"]),
            process_names=names,
            calls=calls,
            waits=waits,
            epochs=epochs,
            arrivals=arrivals,
            errors=errors,
            instants=instants,
            flows=flows,
        )

    def metadata(self, events: list[dict[str, Any]], hosts: dict[int, str]) -> dict[int, str]:
        """Every rank is a process named `rank R (host)`, sorted by R, with threads `calls` and
        `arrivals`; returns the process names."""
        names: dict[int, str] = {}
        sort_index: dict[int, int] = {}
        threads: dict[tuple[int, int], str] = {}
        for e in events:
            if e["ph"] != "M":
                continue
            if e["name"] == "process_name":
                names[e["pid"]] = e["args"]["name"]
            elif e["name"] == "process_sort_index":
                sort_index[e["pid"]] = e["args"]["sort_index"]
            elif e["name"] == "thread_name":
                threads[(e["pid"], e["tid"])] = e["args"]["name"]
        for rank in range(self.ranks):
            named = f"rank {rank} ({hosts[rank]})" if rank in hosts else f"rank {rank} (no records)"
            if names.get(rank) != named:
                self.fail(names.get(rank), f"rank {rank}'s process is not named '{named}'")
            if sort_index.get(rank) != rank:
                self.fail(sort_index.get(rank), f"rank {rank}'s process_sort_index is not {rank}")
            for tid, name in ((0, "calls"), (1, "arrivals")):
                if threads.get((rank, tid)) != name:
                    self.fail(threads.get((rank, tid)), f"rank {rank}'s thread {tid} is not named {name}")
        return names

    def nesting(self, track: tuple[int, int], track_slices: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
        """Slices of one thread either hold one another or do not meet (Chrome draws a stack of
        them); returns each slice's enclosing one (by id() of the event)."""
        parents: dict[int, dict[str, Any]] = {}
        stack: list[dict[str, Any]] = []
        for e in sorted(track_slices, key=lambda e: (e["ts"], -e["dur"])):
            end, overlapping = e["ts"] + e["dur"], False
            while stack:
                top = stack[-1]
                top_end = top["ts"] + top["dur"]
                if end <= top_end + EPS:  # (sorted by start: e starts inside top)
                    parents[id(e)] = top
                    break
                if e["ts"] >= top_end - EPS:  # top is over before e begins
                    stack.pop()
                    continue
                where = (top["name"], top["ts"], top["dur"], e["name"], e["ts"], e["dur"])
                self.fail(where, f"slices overlap without one holding the other on (pid, tid) {track}")
                overlapping = True
                break
            if not overlapping:
                stack.append(e)
        return parents

    def epochs(self, events: list[dict[str, Any]]) -> dict[int, list[Epoch]]:
        """Every async b has exactly one e of the same (cat, id, name), on its track, not
        before it."""
        ends: dict[tuple[str, str, str], list[dict[str, Any]]] = defaultdict(list)
        begins: dict[tuple[str, str, str], list[dict[str, Any]]] = defaultdict(list)
        for e in events:
            if e["ph"] in ("b", "e"):
                (begins if e["ph"] == "b" else ends)[(e["cat"], e["id"], e["name"])].append(e)
        epochs: dict[int, list[Epoch]] = {r: [] for r in range(self.ranks)}
        for key in set(begins) | set(ends):
            b, e = begins.get(key, []), ends.get(key, [])
            if len(b) != 1 or len(e) != 1:
                self.fail(key, f"an async span with {len(b)} begin(s) and {len(e)} end(s)")
                continue
            b, e = b[0], e[0]
            if (b["pid"], b["tid"]) != (e["pid"], e["tid"]):
                self.fail(key, "an async span that ends on another track")
                continue
            if e["ts"] < b["ts"]:
                self.fail(key, "an async span that ends before it begins")
                continue
            args = b["args"]
            epochs[b["pid"]].append(
                Epoch(
                    b["pid"],
                    b["id"],
                    b["name"],
                    b["ts"],
                    e["ts"],
                    args["window"],
                    args["kind"],
                    tuple(args["ranks"]),
                    args["site"],
                )
            )
        ids = [key[1] for key in begins]
        if len(set(ids)) != len(ids):
            self.fail(sorted(ids), "epoch ids are not unique in the file")
        for rank_epochs in epochs.values():
            rank_epochs.sort(key=lambda epoch: (epoch.ts, epoch.end))
        return epochs

    def flows(
        self, events: list[dict[str, Any]], calls: dict[int, list[Call]], arrivals: dict[int, list[Arrival]]
    ) -> list[Flow]:
        """Every flow has one start, on its data call's start, and one finish, inside an
        arrival of that call at the target; one flow per data call and per arrival."""
        ends: dict[int, dict[str, list[dict[str, Any]]]] = defaultdict(lambda: {"s": [], "f": []})
        for e in events:
            if e["ph"] in ("s", "f"):
                ends[e["id"]][e["ph"]].append(e)
        unbound_calls = {r: [c for c in calls[r] if c.name in DATA_CALLS] for r in calls}
        # The arrivals not yet taken by a flow, per (target, origin, call, window), in time order.
        free_arrivals: dict[tuple, list[Arrival]] = defaultdict(list)
        for rank_arrivals in arrivals.values():
            for arrival in rank_arrivals:
                free_arrivals[(arrival.rank, arrival.origin, arrival.call, arrival.window)].append(arrival)
        flows = []
        for flow_id, pair in sorted(ends.items(), key=lambda item: min(e["ts"] for es in item[1].values() for e in es)):
            if len(pair["s"]) != 1 or len(pair["f"]) != 1:
                self.fail(flow_id, f"a flow with {len(pair['s'])} start(s) and {len(pair['f'])} finish(es)")
                continue
            s, f = pair["s"][0], pair["f"][0]
            if s["name"] != f["name"]:
                self.fail((s, f), "a flow whose ends have different names")
                continue
            origin_calls = unbound_calls[s["pid"]]
            call = next((c for c in origin_calls if c.name == s["name"] and abs(c.ts - s["ts"]) <= EPS), None)
            if call is None:
                self.fail(s, "a flow start that is not at the start of a data call of its name")
                continue
            origin_calls.remove(call)
            candidates = free_arrivals[(f["pid"], s["pid"], s["name"], call.window)]
            arrival = next((a for a in candidates if a.ts - EPS <= f["ts"] <= a.end + EPS), None)
            if arrival is None:
                self.fail(f, "a flow finish that lies in no arrival of its call on the target's tid 1")
                continue
            candidates.remove(arrival)
            flows.append(Flow(flow_id, s["name"], s["pid"], f["pid"], s["ts"], f["ts"], call, arrival))
        for rank, left in unbound_calls.items():
            for call in left:
                self.fail(call, f"a data call of rank {rank} without a flow")
        for left in free_arrivals.values():
            for arrival in left:
                self.fail(arrival, "an arrival without a flow")
        return flows

    def dropped_notes(
        self, dropped: dict[int, int], instants: dict[int, list[Instant]], timed: list[dict[str, Any]]
    ) -> None:
        """A rank that dropped N records says so in an instant `dropped N records` at its first
        kept record; one that dropped none does not."""
        first: dict[int, float] = {}
        for e in timed:  # (a rank's own records are on its tid 0; tid 1 holds what others did)
            if e["tid"] == 0:
                first[e["pid"]] = min(first.get(e["pid"], math.inf), e["ts"])
        for rank, count in dropped.items():
            notes = [i for i in instants[rank] if re.fullmatch(r"dropped \d+ records", i.name)]
            if count == 0:
                if notes:
                    self.fail(notes, f"rank {rank} dropped nothing but says it did")
                continue
            if [i.name for i in notes] != [f"dropped {count} records"]:
                self.fail([i.name for i in notes], f"rank {rank} dropped {count} records without one note of it")
            elif abs(notes[0].ts - first[rank]) > EPS:
                self.fail(notes[0], f"rank {rank}'s note of dropped records is not at its first kept record")


def _epoch_names(kind: str, ranks: list[int]) -> list[str]:
    group = "[" + ", ".join(map(str, ranks)) + "]"
    if kind == "fence":
        return ["fence"]
    if kind in ("access", "exposure"):
        return [f"{kind} {group}"]
    if kind == "lock":
        return [f"lock exclusive {r}" for r in ranks] + [f"lock shared {r}" for r in ranks]
    return ["lock_all"]
