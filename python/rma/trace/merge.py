"""The ranks' parts joined into one trace in the Chrome trace event format.

docs/trace_format.md is the contract this module writes to: one process per rank, its calls,
waits and epochs on tid 0, the arrivals of other ranks' operations on tid 1, a flow arrow from
each put, get or accumulate to its arrival. Every time is put on rank 0's clock with the offset
each rank measured at start (rma.trace.recording).

Where an operation *arrives* is a matter of the epoch rules (docs/trace_format.md, Arrivals):
at the target's matching fence (the k-th fence epoch of a window ends at every rank in the same
fence) or wait (the m-th access epoch of an origin to a target matches the target's m-th exposure
epoch that includes the origin), and at the origin's own completing call (unlock, flush) for a
passive target, which takes no part. Counting needs every record since start, and a match needs
the target's epoch to have ended: when a ring dropped records, or the target never ended that
epoch (it failed), the arrival is put at the end of the origin's call with completed_by null.
"""

from __future__ import annotations

import bisect
import glob
import os
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from .files import read_json, write_json
from .part_format import KINDS, PART_VERSION

__all__ = ["merge", "merge_files", "read_parts", "DATA_CALLS", "TRACE_VERSION"]

TRACE_VERSION = 1

# The calls that move data to or from a target: each gets a flow arrow and an arrival.
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
# What completes a passive target's operations at the target (flush_local completes them at the
# origin only).
_PASSIVE_COMPLETERS = frozenset({"flush", "flush_all", "unlock", "unlock_all"})
# A call's category in the trace, by the kind of its record.
_CATEGORIES = {"call": "rma", "collective": "collective", "message": "message"}
_ARRIVAL_US = 0.001  # an arrival's length: an instant, with room for the flow arrow to bind


@dataclass
class _Call:
    name: str
    kind: str
    site: str | None
    begin: int  # aligned ns
    end: int
    bytes: int
    obj: int
    target: int
    tid: int


@dataclass
class _Epoch:
    window: int
    kind: str  # fence, access, exposure, lock exclusive, lock shared, lock_all
    ranks: list[int]
    target: int
    begin: int
    end: int | None = None
    site: str | None = None
    opened: bool = True  # its opening was recorded (else it begins at the rank's first record)
    closed: bool = False  # its end was recorded (else it ends at the rank's last record)


@dataclass
class _Rank:
    rank: int
    host: str
    offset: int
    clock_error: int
    dropped: int
    calls: list[_Call] = field(default_factory=list)
    epochs: list[_Epoch] = field(default_factory=list)
    waits: list[tuple[int, int, list[int], int]] = field(default_factory=list)  # begin, end, ranks, tid
    errors: list[tuple[int, str, str, int]] = field(default_factory=list)  # at, kind, message, tid
    first: int = 0
    last: int = 0


def _ranks(text: str | None) -> list[int]:
    return [int(r) for r in text.split(",")] if text else []


def _read_rank(part: dict[str, Any]) -> _Rank:
    if part.get("rma_trace_part") != PART_VERSION:
        raise ValueError(f"rma.trace: not a trace part of version {PART_VERSION}")
    rank = _Rank(
        part["rank"],
        part.get("host", "?"),
        part.get("offset_ns", 0),
        part.get("clock_error_ns", 0),
        part.get("dropped", 0),
    )
    threads: dict[int, int] = {}  # the first thread that recorded is tid 0; others from 2 on

    def tid_of(thread: int) -> int:
        return threads.setdefault(thread, 0 if not threads else len(threads) + 1)

    open_epochs: dict[tuple, list[_Epoch]] = defaultdict(list)
    closed_unopened: list[_Epoch] = []
    times: list[int] = []
    for kind_number, name, site, text, begin, end, size, obj, target, thread in part["records"]:
        kind = KINDS[kind_number]
        begin += rank.offset
        end += rank.offset
        times += (begin, end)
        tid = tid_of(thread)
        if kind in ("call", "collective", "message"):
            rank.calls.append(_Call(name, kind, site, begin, end, size, obj, target, tid))
        elif kind == "wait":
            rank.waits.append((begin, end, [r for r in _ranks(text) if r != rank.rank], tid))
        elif kind == "epoch_open":
            epoch = _Epoch(obj, name, _ranks(text), target, begin)
            rank.epochs.append(epoch)
            open_epochs[(obj, name, target)].append(epoch)
        elif kind == "epoch_close":
            waiting = open_epochs[(obj, name, target)]
            if waiting:
                epoch = waiting.pop(0)
                epoch.end, epoch.closed = begin, True
            else:  # (its opening was dropped from the ring)
                closed_unopened.append(_Epoch(obj, name, _ranks(text), target, -1, begin, opened=False, closed=True))
        elif kind == "error":
            rank.errors.append((begin, name, text or "", tid))
    if times:
        rank.first, rank.last = min(times), max(times)
    for epoch in closed_unopened:
        epoch.begin = rank.first
    rank.epochs.extend(closed_unopened)
    for epoch in rank.epochs:
        if epoch.end is None:
            epoch.end = rank.last  # still open when the records end
    rank.epochs.sort(key=lambda e: e.begin)
    rank.calls.sort(key=lambda c: c.begin)
    _name_epoch_sites(rank)
    return rank


def _enclosing_call(calls: list[_Call], begins: list[int], at: int, tid: int) -> _Call | None:
    """The innermost call of thread tid that was running at `at`."""
    i = bisect.bisect_right(begins, at) - 1
    for j in range(i, max(i - 64, -1), -1):
        if calls[j].tid == tid and calls[j].begin <= at <= calls[j].end:
            return calls[j]
    return None


def _name_epoch_sites(rank: _Rank) -> None:
    """An epoch's site is its opening call's (the core, which records the epoch, knows no lines);
    an epoch whose opening was dropped has none."""
    begins = [c.begin for c in rank.calls]
    for epoch in rank.epochs:
        call = _enclosing_call(rank.calls, begins, epoch.begin, 0) if epoch.opened else None
        if call is not None:
            epoch.site = call.site


def _epoch_label(epoch: _Epoch) -> str:
    if epoch.kind in ("access", "exposure"):
        return f"{epoch.kind} {epoch.ranks}"
    if epoch.kind.startswith("lock "):
        return f"{epoch.kind} {epoch.target}"
    return epoch.kind


class _Spans:
    """Epochs of one kind under one key, in order; they do not overlap (a window has one fence
    epoch at a time, one lock per target...), so which one holds a moment is a bisection."""

    def __init__(self) -> None:
        self.epochs: list[_Epoch] = []
        self.begins: list[int] = []

    def add(self, epoch: _Epoch) -> None:
        self.epochs.append(epoch)
        self.begins.append(epoch.begin)

    def holding(self, at: int) -> int | None:
        i = bisect.bisect_right(self.begins, at) - 1
        if i >= 0 and at <= (self.epochs[i].end if self.epochs[i].end is not None else at):
            return i
        return None

    def __len__(self) -> int:
        return len(self.epochs)

    def __getitem__(self, index: int) -> _Epoch:
        return self.epochs[index]


class _Matcher:
    """Finds where each data call arrived (see the module's docstring)."""

    def __init__(self, ranks: dict[int, _Rank]) -> None:
        self.exact = all(r.dropped == 0 for r in ranks.values())
        self.fences: dict[tuple, _Spans] = defaultdict(_Spans)  # (rank, window)
        self.access: dict[tuple, _Spans] = defaultdict(_Spans)  # (rank, window, target)
        self.exposure: dict[tuple, _Spans] = defaultdict(_Spans)  # (rank, window, origin)
        self.locks: dict[tuple, _Spans] = defaultdict(_Spans)  # (rank, window, target)
        self.lock_alls: dict[tuple, _Spans] = defaultdict(_Spans)  # (rank, window)
        # The calls that complete passive-target operations, per (rank, window), in order.
        self.completers: dict[tuple, list[_Call]] = defaultdict(list)
        self.completer_begins: dict[tuple, list[int]] = defaultdict(list)
        for r in ranks.values():
            for epoch in r.epochs:  # (sorted by begin)
                if epoch.kind == "fence":
                    self.fences[(r.rank, epoch.window)].add(epoch)
                elif epoch.kind == "access":
                    for target in epoch.ranks:
                        self.access[(r.rank, epoch.window, target)].add(epoch)
                elif epoch.kind == "exposure":
                    for origin in epoch.ranks:
                        self.exposure[(r.rank, epoch.window, origin)].add(epoch)
                elif epoch.kind == "lock_all":
                    self.lock_alls[(r.rank, epoch.window)].add(epoch)
                else:
                    self.locks[(r.rank, epoch.window, epoch.target)].add(epoch)
            for call in r.calls:  # (sorted by begin)
                if call.name in _PASSIVE_COMPLETERS:
                    self.completers[(r.rank, call.obj)].append(call)
                    self.completer_begins[(r.rank, call.obj)].append(call.begin)

    def arrival(self, origin: _Rank, call: _Call) -> tuple[int, str | None]:
        """(aligned ns, completing call) of call's arrival at its target."""
        target, window, at = call.target, call.obj, call.begin
        key = (origin.rank, window)
        if self.lock_alls[key].holding(at) is not None or self.locks[(*key, target)].holding(at) is not None:
            return self._passive(key, call)
        if self.exact:
            k = self.fences[key].holding(at)
            if k is not None:
                theirs = self.fences[(target, window)]
                if k < len(theirs) and theirs[k].closed:
                    return theirs[k].end, "fence"
            m = self.access[(*key, target)].holding(at)
            if m is not None:
                theirs = self.exposure[(target, window, origin.rank)]
                if m < len(theirs) and theirs[m].closed:
                    return theirs[m].end, "wait"
        return call.end, None

    def _passive(self, key: tuple, call: _Call) -> tuple[int, str | None]:
        """The origin's first flush or unlock after the call that covers its target."""
        completers = self.completers[key]
        for i in range(bisect.bisect_left(self.completer_begins[key], call.end), len(completers)):
            later = completers[i]
            if later.name in ("flush_all", "unlock_all") or later.target == call.target:
                return later.end, later.name
        return call.end, None


def merge(parts: list[dict[str, Any]], size: int | None = None) -> dict[str, Any]:
    """The job's trace (docs/trace_format.md) from its ranks' parts; ranks without a part are
    listed as missing."""
    ranks = {r.rank: r for r in (_read_rank(part) for part in parts)}
    size = max([size or 0, *(part.get("size", 0) for part in parts), *(r + 1 for r in ranks)])
    starts = [r.first for r in ranks.values() if r.calls or r.epochs or r.waits or r.errors]
    zero = min(starts) if starts else 0

    def us(ns: int) -> float:
        return round((ns - zero) / 1000, 3)

    events: list[dict[str, Any]] = []
    for rank in range(size):
        mine = ranks.get(rank)
        label = f"rank {rank} ({mine.host})" if mine else f"rank {rank} (no records)"
        events.append({"ph": "M", "name": "process_name", "pid": rank, "tid": 0, "args": {"name": label}})
        events.append({"ph": "M", "name": "process_sort_index", "pid": rank, "tid": 0, "args": {"sort_index": rank}})
        events.append({"ph": "M", "name": "thread_name", "pid": rank, "tid": 0, "args": {"name": "calls"}})
        events.append({"ph": "M", "name": "thread_name", "pid": rank, "tid": 1, "args": {"name": "arrivals"}})
        if mine:
            for tid in sorted({c.tid for c in mine.calls} - {0}):
                name = f"calls (thread {tid - 1})"
                events.append({"ph": "M", "name": "thread_name", "pid": rank, "tid": tid, "args": {"name": name}})

    matcher = _Matcher(ranks)
    flow = 0
    for rank in ranks.values():
        pid = rank.rank
        if rank.dropped:
            events.append(
                {
                    "ph": "i",
                    "s": "p",
                    "cat": "trace",
                    "name": f"dropped {rank.dropped} records",
                    "pid": pid,
                    "tid": 0,
                    "ts": us(rank.first),
                    "args": {"dropped": rank.dropped},
                }
            )
        for call in rank.calls:
            args: dict[str, Any] = {"site": call.site}
            if call.kind == "call":
                args["window"] = call.obj
            elif call.obj >= 0:  # (request.wait knows no communicator)
                args["comm"] = call.obj
            if call.target >= 0:
                args["target"] = call.target
            if call.name in DATA_CALLS or call.kind != "call":
                args["bytes"] = call.bytes
            cat = _CATEGORIES[call.kind]
            events.append(
                {
                    "ph": "X",
                    "cat": cat,
                    "name": call.name,
                    "pid": pid,
                    "tid": call.tid,
                    "ts": us(call.begin),
                    "dur": round((call.end - call.begin) / 1000, 3),
                    "args": args,
                }
            )
            if call.name in DATA_CALLS and call.target >= 0:
                flow += 1
                at, completed_by = matcher.arrival(rank, call)
                events.append(
                    {
                        "ph": "s",
                        "cat": "flow",
                        "name": call.name,
                        "id": flow,
                        "pid": pid,
                        "tid": call.tid,
                        "ts": us(call.begin),
                    }
                )
                arrival_args = {
                    "from": pid,
                    "call": call.name,
                    "bytes": call.bytes,
                    "window": call.obj,
                    "completed_by": completed_by,
                }
                events.append(
                    {
                        "ph": "X",
                        "cat": "arrival",
                        "name": f"{call.name} from {pid}",
                        "pid": call.target,
                        "tid": 1,
                        "ts": us(at),
                        "dur": _ARRIVAL_US,
                        "args": arrival_args,
                    }
                )
                events.append(
                    {
                        "ph": "f",
                        "bp": "e",
                        "cat": "flow",
                        "name": call.name,
                        "id": flow,
                        "pid": call.target,
                        "tid": 1,
                        "ts": us(at),
                    }
                )
        for begin, end, watched, tid in rank.waits:
            name = "wait for " + ", ".join(map(str, watched)) if watched else "wait"
            events.append(
                {
                    "ph": "X",
                    "cat": "wait",
                    "name": name,
                    "pid": pid,
                    "tid": tid,
                    "ts": us(begin),
                    "dur": round((end - begin) / 1000, 3),
                    "args": {"ranks": watched},
                }
            )
        for number, epoch in enumerate(rank.epochs):
            label = _epoch_label(epoch)
            ident = f"r{pid}e{number}"
            kind = "lock" if epoch.kind.startswith("lock ") else epoch.kind
            ranks_of = [epoch.target] if kind == "lock" else epoch.ranks
            events.append(
                {
                    "ph": "b",
                    "cat": "epoch",
                    "name": label,
                    "id": ident,
                    "pid": pid,
                    "tid": 0,
                    "ts": us(epoch.begin),
                    "args": {"window": epoch.window, "kind": kind, "ranks": ranks_of, "site": epoch.site},
                }
            )
            events.append(
                {
                    "ph": "e",
                    "cat": "epoch",
                    "name": label,
                    "id": ident,
                    "pid": pid,
                    "tid": 0,
                    "ts": us(epoch.end if epoch.end is not None else rank.last),
                }
            )
        for at, kind, message, tid in rank.errors:
            events.append(
                {
                    "ph": "i",
                    "s": "p",
                    "cat": "error",
                    "name": kind,
                    "pid": pid,
                    "tid": tid,
                    "ts": us(at),
                    "args": {"message": message},
                }
            )

    return {
        "traceEvents": events,
        "displayTimeUnit": "ms",
        "otherData": {
            "rma_trace": TRACE_VERSION,
            "ranks": size,
            "hosts": {str(r): ranks[r].host for r in sorted(ranks)},
            "clock_offsets_us": {str(r): round(ranks[r].offset / 1000, 3) for r in sorted(ranks)},
            "clock_errors_us": {str(r): round(ranks[r].clock_error / 1000, 3) for r in sorted(ranks)},
            "dropped": {str(r): ranks[r].dropped for r in sorted(ranks)},
            "capacity": max((part.get("capacity", 0) for part in parts), default=0),
            "missing_ranks": [r for r in range(size) if r not in ranks],
        },
    }


def read_parts(trace_file: str) -> list[dict[str, Any]]:
    """The parts the ranks wrote next to trace_file (FILE.rank-<R>.json), by rank."""
    parts = []
    for path in glob.glob(glob.escape(trace_file) + ".rank-*.json"):  # (recording.part_path's)
        parts.append(read_json(path))
    return sorted(parts, key=lambda part: part["rank"])


def merge_files(trace_file: str, size: int | None = None) -> dict[str, Any]:
    """Merge the parts next to trace_file into trace_file, remove them, return the trace.
    FileNotFoundError if there is no part."""
    parts = read_parts(trace_file)
    if not parts:
        raise FileNotFoundError(f"rma.trace: no part of {trace_file} (no {trace_file}.rank-<R>.json)")
    trace = merge(parts, size)
    write_json(trace_file, trace)
    for part in parts:
        os.remove(f"{trace_file}.rank-{part['rank']}.json")
    return trace
