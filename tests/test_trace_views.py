"""Issue 42, item 4: `python -m rma.trace FILE` (the terminal summary) and `--html` (the timeline
page), on traces written by hand from docs/trace_format.md, so that the views are checked
against the format's page rather than against the recorder; the page is opened in headless
Chromium and what it rendered is counted in the DOM."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from processes import run_in_own_group
from rma.trace import reading, summary
from rma.trace.__main__ import main
from rma.trace.html_page import page
from trace_picture import (
    Unavailable,
    browser,
    missing_browser,
    record_bulletin_board,
    save_docs_picture,
    screenshot,
)

CLI_TIMEOUT = 60
DOCS_PICTURE = Path(__file__).resolve().parent.parent / "docs" / "_generated" / "seeing_a_job.png"


def _x(pid: int, name: str, cat: str, ts: float, dur: float, tid: int = 0, **args: Any) -> dict[str, Any]:
    return {"ph": "X", "pid": pid, "tid": tid, "name": name, "cat": cat, "ts": ts, "dur": dur, "args": args}


def _arrival(pid: int, origin: int, ts: float, dur: float, size: int, completed_by: str) -> dict[str, Any]:
    """A put of `origin`'s that completed at `pid` (its tid 1)."""
    args = {"from": origin, "call": "put", "bytes": size, "window": 0, "completed_by": completed_by}
    return {
        "ph": "X",
        "pid": pid,
        "tid": 1,
        "name": f"put from {origin}",
        "cat": "arrival",
        "ts": ts,
        "dur": dur,
        "args": args,
    }


def _epoch(pid: int, id_: str, name: str, ts: float, end: float | None, **args: Any) -> list[dict[str, Any]]:
    begin = {"ph": "b", "pid": pid, "tid": 0, "cat": "epoch", "id": id_, "name": name, "ts": ts, "args": args}
    if end is None:
        return [begin]
    return [begin, {"ph": "e", "pid": pid, "tid": 0, "cat": "epoch", "id": id_, "name": name, "ts": end}]


def _flow(id_: int, name: str, origin: int, ts: float, target: int, arrived: float) -> list[dict[str, Any]]:
    common = {"cat": "flow", "id": id_, "name": name}
    return [
        {"ph": "s", "pid": origin, "tid": 0, "ts": ts, **common},
        {"ph": "f", "bp": "e", "pid": target, "tid": 1, "ts": arrived, **common},
    ]


def _meta(rank: int, host: str) -> list[dict[str, Any]]:
    return [
        {"ph": "M", "pid": rank, "name": "process_name", "args": {"name": f"rank {rank} ({host})"}},
        {"ph": "M", "pid": rank, "name": "process_sort_index", "args": {"sort_index": rank}},
        {"ph": "M", "pid": rank, "tid": 0, "name": "thread_name", "args": {"name": "calls"}},
        {"ph": "M", "pid": rank, "tid": 1, "name": "thread_name", "args": {"name": "arrivals"}},
    ]


HOSTS = {"0": "node1", "1": "node1", "2": "node2", "3": "node2"}


def hand_made_trace() -> dict[str, Any]:
    """4 ranks (rank 3 missing): a fence epoch on window 0 at ranks 0-2 with a put ring, then
    rank 0 locks rank 2 and puts, rank 2 opens a lock_all it never closes and raises a
    ConflictError. Times in microseconds; the expected numbers are in the tests below."""
    events: list[dict[str, Any]] = []
    for rank in range(4):
        events += _meta(rank, HOSTS[str(rank)])
    site = "ring.py:10"
    # rank 0: calls 10 + 5 + 10 + 5 + 10 + 10 = 50; waits 7 on [1] and 8 on [2]
    events += _epoch(0, "0:1", "fence", 0, 100, window=0, kind="fence", ranks=[0, 1, 2, 3], site=site)
    events += [
        _x(0, "fence", "rma", 0, 10, window=0, site=site),
        _x(0, "put", "rma", 20, 5, window=0, target=1, bytes=8, site="ring.py:11"),
        _x(0, "fence", "rma", 90, 10, window=0, site="ring.py:12"),
        _x(0, "wait for 1", "wait", 92, 7, ranks=[1]),
    ]
    events += _flow(1, "put", 0, 20, 1, 95)
    events += _epoch(0, "0:2", "lock exclusive 2", 120, 400, window=0, kind="lock", ranks=[2], site="ring.py:20")
    events += [
        _x(0, "lock", "rma", 120, 5, window=0, target=2, site="ring.py:20"),
        _x(0, "put", "rma", 130, 10, window=0, target=2, bytes=64, site="ring.py:21"),
        _x(0, "unlock", "rma", 390, 10, window=0, target=2, site="ring.py:22"),
        _x(0, "wait for 2", "wait", 391, 8, ranks=[2]),
    ]
    events += _flow(3, "put", 0, 130, 2, 395)
    # rank 1: calls 30 + 5 + 5 = 40; waits 26 on [0, 2]
    events += _epoch(1, "1:1", "fence", 0, 100, window=0, kind="fence", ranks=[0, 1, 2, 3], site=site)
    events += [
        _x(1, "fence", "rma", 0, 30, window=0, site=site),
        _x(1, "wait for 0, 2", "wait", 2, 26, ranks=[0, 2]),
        _x(1, "put", "rma", 40, 5, window=0, target=2, bytes=8, site="ring.py:11"),
        _x(1, "fence", "rma", 95, 5, window=0, site="ring.py:12"),
        _arrival(1, 0, 90, 10, 8, "fence"),
    ]
    events += _flow(2, "put", 1, 40, 2, 99)
    # rank 2: calls 5 + 40 + 10 = 55; waits 38 on [0, 1]; a lock_all never closed (ends at
    # its last record: the arrival at 400)
    events += _epoch(2, "2:1", "fence", 0, 100, window=0, kind="fence", ranks=[0, 1, 2, 3], site=site)
    events += [
        _x(2, "fence", "rma", 0, 5, window=0, site=site),
        _x(2, "fence", "rma", 60, 40, window=0, site="ring.py:12"),
        _x(2, "wait for 0, 1", "wait", 61, 38, ranks=[0, 1]),
        _arrival(2, 1, 60, 40, 8, "fence"),
        _arrival(2, 0, 390, 10, 64, "unlock"),
        {"ph": "i", "s": "p", "pid": 2, "tid": 0, "cat": "error", "name": "ConflictError", "ts": 150,
         "args": {"message": "put from rank 0 conflicts with a load of rank 2"}},
        _x(2, "barrier", "collective", 200, 10, comm=0, bytes=0, site="ring.py:30"),
    ]  # fmt: skip
    events += _epoch(2, "2:2", "lock_all", 180, None, window=0, kind="lock_all", ranks=[0, 1, 2, 3], site="ring.py:29")
    return {
        "traceEvents": events,
        "displayTimeUnit": "ms",
        "otherData": {
            "rma_trace": 1,
            "ranks": 4,
            "hosts": HOSTS,
            "clock_offsets_us": {"0": 0.0, "1": 0.0, "2": -12.4, "3": -12.9},
            "dropped": {"0": 0, "1": 0, "2": 5, "3": 0},
            "capacity": 65536,
            "missing_ranks": [3],
        },
    }


EPOCHS, FLOWS, CALLS, WAITS = 5, 3, 12, 4


@pytest.fixture
def trace_file(tmp_path: Path) -> Path:
    path = tmp_path / "job.json"
    path.write_text(json.dumps(hand_made_trace()))
    return path


def test_the_reader_pairs_epochs_and_flows(trace_file: Path) -> None:
    trace = reading.load(trace_file)
    assert [t.host for t in trace.tracks] == ["node1", "node1", "node2", "node2"]
    assert sum(len(t.epochs) for t in trace.tracks) == EPOCHS
    assert sum(len(t.calls) for t in trace.tracks) == CALLS
    assert [(f.origin, f.target) for f in trace.flows] == [(0, 1), (1, 2), (0, 2)]
    assert trace.unpaired_flows == 0
    never_closed = trace.tracks[2].epochs[-1]
    assert (never_closed.kind, never_closed.closed, never_closed.end) == ("lock_all", False, 400)
    assert trace.dropped[2] == 5 and trace.missing_ranks == [3] and trace.end == 400


def test_the_summary_counts_calls_waits_and_slowest_epochs(trace_file: Path) -> None:
    ranks = summary.summarize(reading.load(trace_file), top=1)
    assert [r.call_time for r in ranks] == [50, 40, 55, 0]
    assert [r.wait_time for r in ranks] == [15, 26, 38, 0]
    assert [(w.ranks, w.time, w.count) for w in ranks[0].waits_on] == [((2,), 8, 1), ((1,), 7, 1)]
    assert [(w.ranks, w.time) for w in ranks[1].waits_on] == [((0, 2), 26)]
    slowest = ranks[0].slowest
    assert len(slowest) == 1 and (slowest[0].name, slowest[0].dur, slowest[0].site) == (
        "lock exclusive 2",
        280,
        "ring.py:20",
    )
    assert ranks[2].slowest[0].kind == "lock_all" and len(ranks[2].track.errors) == 1


def test_time_in_calls_counts_a_nested_call_once() -> None:
    calls = [reading.Slice("fence", "rma", 0, 10, {}), reading.Slice("barrier", "collective", 2, 5, {})]
    assert summary.covered(calls) == 10
    assert summary.covered([*calls, reading.Slice("put", "rma", 20, 1, {})]) == 11


def test_the_command_prints_the_summary_within_80_columns(trace_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(trace_file), "--top", "2"]) == 0
    out = capsys.readouterr().out
    assert all(len(line) <= 80 for line in out.splitlines()), out
    assert "job.json: 4 ranks" in out
    assert "hosts    2 (node1: 0, 1; node2: 2, 3)" in out
    assert "rank 2: 5 oldest records (a ring of 65536 records per rank)" in out
    assert "missing  3" in out and "rank 3 (node2): missing" in out
    rank0 = out.split("rank 0 (node1)\n")[1].split("\n\n")[0]
    assert "in calls      50 us  (5 calls" not in rank0  # six calls
    assert "in calls      50 us  (6 calls" in rank0
    assert "on 2" in rank0 and "on 1" in rank0
    assert "epochs    2 in all; slowest:" in rank0
    assert "280 us  lock exclusive 2       win 0 ring.py:20" in rank0
    assert "error     ConflictError: put from rank 0 conflicts" in out
    assert "220 us  lock_all (open)" in out


def test_a_long_site_keeps_its_file_and_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    obj = hand_made_trace()
    long_site = "/home/someone/" + "very/deep/" * 10 + "program.py:42"
    for event in obj["traceEvents"]:
        if event.get("id") == "0:2" and event["ph"] == "b":
            event["args"]["site"] = long_site
    (tmp_path / "t.json").write_text(json.dumps(obj))
    assert main([str(tmp_path / "t.json")]) == 0
    out = capsys.readouterr().out
    assert all(len(line) <= 80 for line in out.splitlines()), out
    assert "win 0 ...very/deep/" in out and "/program.py:42\n" in out


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (None, "no such file"),
        ("{not json", "not an rma trace: not JSON"),
        ('{"events": []}', "no traceEvents list"),
        ('{"traceEvents": [{"ph": "X", "pid": 0, "name": "put"}]}', "has no number ts"),
        ('{"traceEvents": [], "otherData": {"rma_trace": 7}}', "trace format 7"),
    ],
)
def test_bad_input_is_one_line_and_status_2(tmp_path: Path, content: str | None, says: str) -> None:
    path = tmp_path / "bad.json"
    if content is not None:
        path.write_text(content)
    done = subprocess.run(
        [sys.executable, "-m", "rma.trace", str(path)], capture_output=True, text=True, timeout=CLI_TIMEOUT
    )
    assert done.returncode == 2, done
    assert done.stdout == "" and len(done.stderr.splitlines()) == 1, done.stderr
    assert says in done.stderr and "Traceback" not in done.stderr


def test_the_page_is_self_contained(trace_file: Path) -> None:
    html = page(reading.load(trace_file), "job.json")
    assert "http://" not in html.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "https://" not in html and "<script" not in html and "<link" not in html
    assert html.count('class="rank-row"') == 4
    assert html.count('class="flow"') == FLOWS


def test_parts_left_unmerged_are_merged_first(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A rank started without rmarun under RMA_TRACE=FILE leaves its part, FILE.rank-0.json;
    the command merges it into FILE before it reads it."""
    path = tmp_path / "alone.json"
    code = (
        "import numpy as np, rma\n"
        "comm = rma.init()\n"
        "win = rma.Window.allocate(comm, 4, np.int64)\n"
        "with win.fence():\n"
        "    win.put(np.arange(4), 0)\n"
        "win.free()\n"
    )
    done = run_in_own_group(
        [sys.executable, "-c", code], timeout=CLI_TIMEOUT, env={**os.environ, "RMA_TRACE": str(path)}
    )
    assert done.returncode == 0, done.stderr
    assert not path.exists() and (tmp_path / "alone.json.rank-0.json").exists()
    assert main([str(path)]) == 0
    out = capsys.readouterr().out
    assert path.exists() and not (tmp_path / "alone.json.rank-0.json").exists()
    assert "alone.json: 1 rank," in out and "epochs    1 in all" in out and "fence" in out


@pytest.fixture(scope="module")
def chromium() -> Any:
    if (why := missing_browser()) is not None:
        pytest.skip(why)
    try:
        with browser() as driver:
            yield driver
    except Unavailable as exc:
        pytest.skip(str(exc))


def rendered(driver: Any, html: Path) -> dict[str, int]:
    """What Chromium drew of the page: the elements of each class that have a box on screen."""
    driver.get(html.resolve().as_uri())
    counts: dict[str, int] = driver.execute_script(
        """
        const drawn = (selector) => [...document.querySelectorAll(selector)].filter((e) => {
            const box = e.getBoundingClientRect();
            return box.width > 0 || box.height > 0;
        }).length;
        return {rows: drawn('g.rank-row'), epochs: drawn('rect.epoch'), flows: drawn('path.flow'),
                calls: drawn('rect.call'), waits: drawn('rect.wait'), errors: drawn('path.error'),
                titles: document.querySelectorAll('svg title').length};
        """
    )
    return counts


def test_chromium_renders_a_row_per_rank_a_bar_per_epoch_an_arrow_per_flow(
    trace_file: Path, tmp_path: Path, chromium: Any
) -> None:
    html = tmp_path / "job.html"
    assert main([str(trace_file), "--html", str(html)]) == 0
    counts = rendered(chromium, html)
    assert counts == {
        "rows": 4,
        "epochs": EPOCHS,
        "flows": FLOWS,
        "calls": CALLS,
        "waits": WAITS,
        "errors": 1,
        "titles": counts["titles"],
    }
    assert counts["titles"] >= EPOCHS + FLOWS + CALLS + WAITS + 1
    png = tmp_path / "job.png"
    screenshot(chromium, html, png)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000


def test_a_real_job_traced_summarized_and_drawn(
    tmp_path: Path, chromium: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """The bulletin board at 4 ranks under `rmarun --trace`: the summary and the page of its
    real trace; the page's screenshot is the docs' picture (docs/seeing_a_job.md)."""
    path = tmp_path / "bulletin_board.json"
    done = record_bulletin_board(path)
    assert done.returncode == 0, done.stderr
    trace = reading.load(path)
    assert len(trace.tracks) == 4 and not trace.missing_ranks and not any(trace.dropped.values())
    assert all(t.calls and t.epochs for t in trace.tracks)
    assert {e.kind for t in trace.tracks for e in t.epochs} >= {"lock"}
    assert trace.flows and trace.unpaired_flows == 0
    assert all(0 <= f.origin < 4 and 0 <= f.target < 4 for f in trace.flows)
    assert all(e.site.startswith("bulletin_board.py:") for t in trace.tracks for e in t.epochs), trace.tracks[0].epochs[
        0
    ]

    html = tmp_path / "bulletin_board.html"
    assert main([str(path), "--html", str(html)]) == 0
    out = capsys.readouterr().out
    assert all(len(line) <= 80 for line in out.splitlines() if not line.startswith("wrote ")), out  # (its path)
    assert "bulletin_board.json: 4 ranks" in out and "dropped  none" in out and "missing  none" in out
    for r, summarized in enumerate(summary.summarize(trace)):
        assert f"rank {r} (" in out
        assert 0 < summarized.call_time <= trace.end
        assert f"epochs    {len(trace.tracks[r].epochs)} in all" in out
    counts = rendered(chromium, html)
    epochs = sum(len(t.epochs) for t in trace.tracks)
    assert (counts["rows"], counts["epochs"], counts["flows"]) == (4, epochs, len(trace.flows))
    save_docs_picture(chromium, path, DOCS_PICTURE)
    assert DOCS_PICTURE.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
