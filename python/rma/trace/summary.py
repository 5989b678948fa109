"""The terminal summary of a trace (`python -m rma.trace FILE`): per rank, the time in calls, the
time spent waiting and on whom, and the slowest epochs with the source lines that opened them;
above them, the job (ranks, hosts, dropped records, missing ranks). Lines fit 80 columns."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from .reading import Epoch, Mark, Slice, Trace, Track

WIDTH = 80


@dataclass(frozen=True)
class WaitsOn:
    """The waits of a rank for one set of ranks (a wait for 1 and 2 is its own entry)."""

    ranks: tuple[int, ...]
    time: float
    count: int


@dataclass(frozen=True)
class RankSummary:
    track: Track
    call_time: float  # microseconds
    wait_time: float
    waits_on: list[WaitsOn]  # the longest first
    slowest: list[Epoch]  # the slowest first, at most `top`

    @property
    def rank(self) -> int:
        return self.track.rank


def summarize(trace: Trace, top: int = 5) -> list[RankSummary]:
    """One summary per rank of the trace, in rank order."""
    return [_summary(track, top) for track in trace.tracks]


def _summary(track: Track, top: int) -> RankSummary:
    groups: dict[tuple[int, ...], list[Slice]] = {}
    for wait in track.waits:
        ranks = wait.args.get("ranks")
        key = tuple(r for r in ranks if isinstance(r, int)) if isinstance(ranks, list) else ()
        groups.setdefault(key, []).append(wait)
    waits_on = [WaitsOn(key, covered(waits), len(waits)) for key, waits in groups.items()]
    return RankSummary(
        track=track,
        call_time=covered(track.calls),
        wait_time=covered(track.waits),
        waits_on=sorted(waits_on, key=lambda w: (-w.time, w.ranks)),
        slowest=sorted(track.epochs, key=lambda e: (-e.dur, e.start))[: max(top, 0)],
    )


def covered(pieces: Iterable[Slice]) -> float:
    """The time covered by the slices, counting overlaps once: the sum of their durations when
    none overlap, as calls of one thread do; a call recorded inside another (a window call that
    runs a collective) does not count twice."""
    total = 0.0
    reach = float("-inf")
    for piece in sorted(pieces, key=lambda p: p.start):
        start = max(piece.start, reach)
        if piece.end > start:
            total += piece.end - start
        reach = max(reach, piece.end)
    return total


def duration(us: float) -> str:
    """A time for a person: 812 us, 12.3 ms, 4.56 s."""
    if us < 1000:
        return f"{us:.3g} us" if us < 10 else f"{us:.0f} us"
    if us < 1_000_000:
        return f"{us / 1000:.3g} ms" if us < 100_000 else f"{us / 1000:.0f} ms"
    return f"{us / 1_000_000:.3g} s"


def ranks_text(ranks: Iterable[int]) -> str:
    """0-3, 6, 8-9: runs of consecutive ranks shortened."""
    runs: list[list[int]] = []
    for r in sorted(set(ranks)):
        if runs and r == runs[-1][-1] + 1:
            runs[-1].append(r)
        else:
            runs.append([r])
    return ", ".join(f"{run[0]}-{run[-1]}" if len(run) > 2 else ", ".join(map(str, run)) for run in runs)


def render(trace: Trace, top: int = 5, name: str = "trace") -> str:
    """The summary as text, every line at most 80 columns."""
    lines = _job_lines(trace, name)
    for summary in summarize(trace, top):
        lines.append("")
        lines.extend(_rank_lines(summary, trace, top))
    return "\n".join(_fit(line) for line in lines) + "\n"


def _job_lines(trace: Trace, name: str) -> list[str]:
    by_host: dict[str, list[int]] = {}
    for track in trace.tracks:
        by_host.setdefault(track.host or "?", []).append(track.rank)
    hosts = "; ".join(f"{host}: {ranks_text(ranks)}" for host, ranks in by_host.items())
    lines = [
        f"{name}: {_count(len(trace.tracks), 'rank')}, {duration(trace.end)} of records",
        f"  hosts    {len(trace.hosts)} ({hosts})",
    ]
    dropped = {r: n for r, n in sorted(trace.dropped.items()) if n}
    ring = f" (a ring of {trace.capacity} records per rank)" if trace.capacity else ""
    if dropped:
        lines.append("  dropped  " + ", ".join(f"rank {r}: {n}" for r, n in dropped.items()) + f" oldest records{ring}")
    else:
        lines.append(f"  dropped  none{ring}")
    missing = ranks_text(trace.missing_ranks) if trace.missing_ranks else "none"
    lines.append(f"  missing  {missing}" + (" (their records never arrived)" if trace.missing_ranks else ""))
    if trace.unpaired_flows:
        lines.append(f"  arrows   {len(trace.flows)}, and {trace.unpaired_flows} with one end only")
    return lines


def _rank_lines(summary: RankSummary, trace: Trace, top: int) -> list[str]:
    track = summary.track
    if track.rank in trace.missing_ranks:
        return [f"{track.label}: missing (no records)"]
    share = f", {100 * summary.call_time / trace.end:.0f}% of the trace" if trace.end > 0 else ""
    lines = [
        track.label,
        f"  in calls  {duration(summary.call_time):>9}  ({_count(len(track.calls), 'call')}{share})",
        f"  waiting   {duration(summary.wait_time):>9}  ({_count(len(track.waits), 'wait')})",
    ]
    for waits in summary.waits_on:
        whom = ranks_text(waits.ranks) if waits.ranks else "?"
        lines.append(f"    on {whom:<12} {duration(waits.time):>9}  ({waits.count}x)")
    lines.extend(_error_line(error) for error in track.errors)
    epochs = len(track.epochs)
    if epochs:
        shown = "slowest" if epochs <= top else f"slowest {len(summary.slowest)}"
        lines.append(f"  epochs    {epochs} in all; {shown}:")
        for epoch in summary.slowest:
            open_ = "" if epoch.closed else " (open)"
            window = f"win {epoch.args['window']} " if "window" in epoch.args else ""
            head = f"    {duration(epoch.dur):>9}  {epoch.name + open_:<22} {window}"
            lines.append(head + _tail(epoch.site, WIDTH - len(head)))
    else:
        lines.append("  epochs    none")
    return lines


def _count(n: int, what: str) -> str:
    return f"{n} {what}" + ("" if n == 1 else "s")


def _error_line(error: Mark) -> str:
    return f"  error     {error.name}: {error.args.get('message', '')}".rstrip(": ")


def _tail(site: str, room: int) -> str:
    """A site cut to `room` columns from the left: its end, the file's name and line, is what
    tells where (a long path loses its folders)."""
    return site if len(site) <= room else "..." + site[-max(room - 3, 8) :]


def _fit(line: str) -> str:
    """The line cut to WIDTH columns (an error's long message, a long host list)."""
    return line if len(line) <= WIDTH else line[: WIDTH - 3] + "..."
