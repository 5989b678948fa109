"""rma.notebook.timeline: a trace (docs/trace_format.md) drawn as a figure, counted from its artists.

The traces here are made by hand from the format's specification, so that the drawing is tested
without the recorder; the figures are drawn headless (Agg).
"""

from __future__ import annotations

import json
import sys

import matplotlib
import pytest

matplotlib.use("Agg")

from matplotlib.backend_bases import MouseEvent  # noqa: E402

import rma.notebook  # noqa: E402
from rma.errors import RMAError  # noqa: E402

# The module: rma.notebook.timeline is the function (which the package imports from it).
timeline_module = sys.modules["rma.notebook.timeline"]


class TraceMaker:
    """Events of a trace in the format of docs/trace_format.md, with counts of what they hold."""

    def __init__(self, ranks: int, hosts: list[str] | None = None) -> None:
        self.ranks = ranks
        self.events: list[dict] = []
        self.calls = self.waits = self.epochs = self.flows = self.errors = 0
        self._ids = 0
        hosts = hosts or ["node1"] * ranks
        for rank in range(ranks):
            self.events.append(
                {
                    "ph": "M",
                    "name": "process_name",
                    "pid": rank,
                    "tid": 0,
                    "args": {"name": f"rank {rank} ({hosts[rank]})"},
                }
            )
            self.events.append(
                {"ph": "M", "name": "process_sort_index", "pid": rank, "tid": 0, "args": {"sort_index": rank}}
            )
            for tid, name in ((0, "calls"), (1, "arrivals")):
                self.events.append({"ph": "M", "name": "thread_name", "pid": rank, "tid": tid, "args": {"name": name}})
        self.hosts = {str(r): hosts[r] for r in range(ranks)}
        self.dropped = {str(r): 0 for r in range(ranks)}
        self.missing: list[int] = []

    def _id(self) -> int:
        self._ids += 1
        return self._ids

    def call(self, rank, name, ts, dur, cat="rma", **args):
        args.setdefault("site", "ring.py:7")
        self.events.append(
            {"ph": "X", "cat": cat, "name": name, "pid": rank, "tid": 0, "ts": ts, "dur": dur, "args": args}
        )
        self.calls += 1

    def wait(self, rank, ts, dur, on):
        name = "wait for " + ", ".join(map(str, on))
        self.events.append(
            {"ph": "X", "cat": "wait", "name": name, "pid": rank, "tid": 0, "ts": ts, "dur": dur, "args": {"ranks": on}}
        )
        self.waits += 1

    def epoch(self, rank, name, kind, begin, end, window=0, ranks=None):
        ident = f"e{self._id()}"
        args = {"window": window, "kind": kind, "ranks": ranks or list(range(self.ranks)), "site": "ring.py:5"}
        common = {"cat": "epoch", "name": name, "pid": rank, "tid": 0, "id": ident}
        self.events.append({"ph": "b", "ts": begin, "args": args, **common})
        self.events.append({"ph": "e", "ts": end, **common})
        self.epochs += 1

    def data(self, origin, target, name, ts, dur, arrival, size=8, window=0):
        """A data call on origin, its arrival on target's tid 1 at `arrival`, and the flow between."""
        self.call(origin, name, ts, dur, window=window, target=target, bytes=size)
        flow = self._id()
        self.events.append({"ph": "s", "cat": "flow", "name": name, "id": flow, "pid": origin, "tid": 0, "ts": ts})
        self.events.append(
            {
                "ph": "X",
                "cat": "arrival",
                "name": f"{name} from {origin}",
                "pid": target,
                "tid": 1,
                "ts": arrival,
                "dur": 0.5,
                "args": {"from": origin, "call": name, "bytes": size, "window": window, "completed_by": "fence"},
            }
        )
        self.events.append(
            {"ph": "f", "bp": "e", "cat": "flow", "name": name, "id": flow, "pid": target, "tid": 1, "ts": arrival}
        )
        self.flows += 1

    def error(self, rank, ts, name, message):
        self.events.append(
            {
                "ph": "i",
                "s": "p",
                "cat": "error",
                "name": name,
                "pid": rank,
                "tid": 0,
                "ts": ts,
                "args": {"message": message},
            }
        )
        self.errors += 1

    def trace(self) -> dict:
        return {
            "traceEvents": self.events,
            "displayTimeUnit": "ms",
            "otherData": {
                "rma_trace": 1,
                "ranks": self.ranks,
                "hosts": self.hosts,
                "clock_offsets_us": {str(r): 0.0 for r in range(self.ranks)},
                "dropped": self.dropped,
                "capacity": 65536,
                "missing_ranks": self.missing,
            },
        }


def fence_ring(ranks: int, rounds: int = 2) -> TraceMaker:
    """Each round: fence, a put to the right neighbour, fence; the second fence waits for the left one."""
    t = TraceMaker(ranks)
    for rank in range(ranks):
        t.call(rank, "win_create", 0.0, 20.0, window=0)
    for r in range(rounds):
        base = 100.0 + 1000.0 * r
        for rank in range(ranks):
            right = (rank + 1) % ranks
            t.call(rank, "fence", base, 10.0, window=0)
            t.epoch(rank, "fence", "fence", base + 10.0, base + 400.0 + 10 * rank)
            t.data(rank, right, "put", base + 50.0 + rank, 2.0, base + 410.0 + 10 * right)
            t.call(rank, "fence", base + 300.0, 120.0 + 10 * rank, window=0)
            if rank:
                t.wait(rank, base + 310.0, 80.0, [(rank - 1) % ranks])
    for rank in range(ranks):
        t.call(rank, "barrier", 3000.0, 50.0, cat="collective", comm=0, bytes=0)
    return t


def artists(figure, gid):
    axes = figure.axes[0]
    return [a for a in (*axes.collections, *axes.patches, *axes.lines, *axes.texts) if a.get_gid() == gid]


def items(figure, gid):
    """How many things the artists of this gid draw (a collection draws one per path or segment)."""
    count = 0
    for artist in artists(figure, gid):
        if hasattr(artist, "get_segments"):
            count += len(artist.get_segments())
        elif hasattr(artist, "get_offsets") and artist.get_gid() == "rma-error":
            count += len(artist.get_offsets())
        elif hasattr(artist, "get_paths"):
            count += len(artist.get_paths())
        else:
            count += 1
    return count


def rank_rows(figure):
    return [label.get_text() for label in figure.axes[0].get_yticklabels()]


@pytest.mark.parametrize("ranks", [1, 2, 4])
def test_a_fence_ring_draws_a_row_per_rank_and_each_thing_once(ranks):
    made = fence_ring(ranks)
    figure = rma.notebook.timeline(made.trace())
    assert rank_rows(figure) == [f"rank {r}" for r in range(ranks)]
    assert items(figure, "rma-epoch") == made.epochs == 2 * ranks
    assert items(figure, "rma-call") == made.calls == ranks * (1 + 3 * 2 + 1)
    assert items(figure, "rma-wait") == made.waits == 2 * (ranks - 1)
    assert items(figure, "rma-flow") == made.flows == 2 * ranks
    assert items(figure, "rma-error") == 0
    assert figure.axes[0].get_xlabel() == "time (ms)"
    # Each arrow leaves its origin's row at the put and ends on its target's row at the arrival.
    ends = sorted(
        (origin_y, target_y, round(origin_x * 1000, 3), round(target_x * 1000, 3))
        for (origin_x, origin_y), (target_x, target_y) in (a._posA_posB for a in artists(figure, "rma-flow"))
    )
    expected = sorted(
        (
            rank,
            (rank + 1) % ranks,
            100.0 + 1000.0 * r + 50.0 + rank,
            100.0 + 1000.0 * r + 410.0 + 10 * ((rank + 1) % ranks),
        )
        for r in range(2)
        for rank in range(ranks)
    )
    assert ends == expected
    figure.savefig(__import__("io").BytesIO(), format="png")  # it renders


def test_ticks_bars_and_waits_sit_on_their_ranks_rows():
    made = TraceMaker(4)
    made.call(2, "lock", 10.0, 5.0, window=1, target=3)
    made.epoch(2, "lock exclusive 3", "lock", 15.0, 90.0, window=1, ranks=[3])
    made.wait(3, 20.0, 30.0, [2])
    made.call(3, "barrier", 20.0, 40.0, cat="collective", comm=0, bytes=0)
    figure = rma.notebook.timeline(made.trace())
    (ticks,) = [a for a in artists(figure, "rma-call") if len(a.get_segments()) and a.get_label() == "calls"]
    ((x0, y0), (x1, y1)) = ticks.get_segments()[0]
    assert x0 == x1 == pytest.approx(0.010) and y0 < 2 < y1 and y1 - y0 < 1
    (collective,) = [a for a in artists(figure, "rma-call") if a.get_label() == "collectives"]
    assert collective.get_segments()[0][0][0] == pytest.approx(0.020) and collective.get_segments()[0][0][1] > 2.5
    (bar,) = artists(figure, "rma-epoch")
    xs, ys = bar.get_paths()[0].vertices.T
    assert (xs.min(), xs.max()) == pytest.approx((0.015, 0.090)) and 1.5 < ys.min() < ys.max() < 2.5
    (wait,) = artists(figure, "rma-wait")
    xs, ys = wait.get_paths()[0].vertices.T
    assert (xs.min(), xs.max()) == pytest.approx((0.020, 0.050)) and 2.5 < ys.min() < ys.max() < 3.5
    # The legend names what is drawn, and nothing else.
    legend = [t.get_text() for t in figure.axes[0].get_legend().get_texts()]
    assert legend == ["waiting", "lock epoch", "call", "collective"]


def test_overlapping_epochs_of_one_rank_stay_apart():
    made = TraceMaker(2)
    made.epoch(0, "access [1]", "access", 0.0, 100.0, window=0, ranks=[1])
    made.epoch(0, "lock shared 1", "lock", 20.0, 60.0, window=1, ranks=[1])
    made.epoch(0, "fence", "fence", 200.0, 300.0, window=2)  # after both: back in the first lane
    figure = rma.notebook.timeline(made.trace())
    tops = {}
    for collection in artists(figure, "rma-epoch"):
        for path in collection.get_paths():
            xs, ys = path.vertices.T
            tops[round(xs.min() * 1000)] = ys.min()
    assert tops[0] != tops[20] and tops[200] == tops[0]
    assert all(-0.5 < top < 0.5 for top in tops.values())


def test_a_rank_that_puts_to_itself_and_errors():
    made = TraceMaker(1)
    made.epoch(0, "lock_all", "lock_all", 0.0, 50.0, ranks=[0])
    made.data(0, 0, "put", 5.0, 1.0, 40.0)
    made.error(0, 45.0, "ConflictError", "put of rank 0 and get of rank 0 overlap")
    figure = rma.notebook.timeline(made.trace())
    assert rank_rows(figure) == ["rank 0"]
    assert items(figure, "rma-flow") == 1 and items(figure, "rma-error") == 1


def test_dropped_records_missing_ranks_and_hosts_are_told():
    made = fence_ring(4, rounds=1)
    made.hosts = {"0": "node1", "1": "node1", "2": "node2", "3": "node2"}
    made.dropped["2"] = 130
    made.missing = [3]
    figure = rma.notebook.timeline(made.trace())
    assert rank_rows(figure) == ["rank 0 (node1)", "rank 1 (node1)", "rank 2 (node2)", "rank 3 (node2) (missing)"]
    title = figure.axes[0].get_title()
    assert "rank 2 dropped 130 records" in title and "no records from rank(s) 3" in title


def test_a_trace_file_and_the_last_trace(tmp_path, monkeypatch):
    made = fence_ring(2, rounds=1)
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(made.trace()))
    assert items(rma.notebook.timeline(path), "rma-flow") == 2
    assert items(rma.notebook.timeline(str(path)), "rma-flow") == 2
    assert items(rma.notebook.timeline(made.events), "rma-flow") == 2  # the format's array form
    monkeypatch.setattr(timeline_module, "_last", None)
    with pytest.raises(RMAError, match="no trace yet"):
        rma.notebook.timeline()
    monkeypatch.setattr(timeline_module, "_last", made.trace())
    assert rma.notebook.last_trace() is timeline_module._last
    assert items(rma.notebook.timeline(), "rma-flow") == 2
    with pytest.raises(ValueError, match="not a trace"):
        rma.notebook.timeline({"events": []})


def test_an_empty_trace_draws_empty_rows():
    figure = rma.notebook.timeline(TraceMaker(3).trace())
    assert rank_rows(figure) == ["rank 0", "rank 1", "rank 2"]
    assert all(items(figure, gid) == 0 for gid in ("rma-epoch", "rma-call", "rma-wait", "rma-flow"))


def hover_at(figure, x, y):
    axes = figure.axes[0]
    figure.canvas.draw()
    px, py = axes.transData.transform((x, y))
    figure.canvas.callbacks.process("motion_notify_event", MouseEvent("motion_notify_event", figure.canvas, px, py))
    (note,) = artists(figure, "rma-hover")
    return note.get_text() if note.get_visible() else None


def test_hover_text_names_the_call_its_site_and_bytes():
    made = TraceMaker(2)
    made.epoch(0, "fence", "fence", 0.0, 3000.0)
    made.data(0, 1, "put", 1000.0, 10.0, 2000.0, size=64)
    made.wait(1, 2500.0, 400.0, [0])
    figure = rma.notebook.timeline(made.trace())
    assert hover_at(figure, 1.0, 0.0) == "put, to rank 1, 64 B, window 0, at ring.py:7, 0.010 ms"
    assert hover_at(figure, 2.7, 1.0) == "wait for 0 (0.400 ms)"
    assert hover_at(figure, 0.5, -0.1).startswith("fence epoch, window 0, ranks [0, 1], opened at ring.py:5")
    assert hover_at(figure, 0.5, 1.0) is None  # nothing there
    (arrow,) = artists(figure, "rma-flow")
    assert arrow.get_label() == "put: rank 0 -> rank 1, 64 B, at ring.py:7, completed by fence"


class FakeCluster:
    """What %%rma uses of a cluster, with ranks that raise where told."""

    def __init__(self, size, raising=()):
        self.size, self.raising, self.cells = size, raising, []
        self.stopped = False

    def run(self, code, on_output=None, on_error=None):
        self.cells.append(code)
        results = []
        for rank in range(self.size):
            error = "Traceback...\nValueError: no\n" if rank in self.raising else None
            results.append(rma.notebook.RankResult(rank, "", "", error))
            if error and on_error:
                on_error(results[-1])
        return results


@pytest.fixture
def fake_recorder(monkeypatch):
    """%%rma --timeline against a fake cluster and recorder: what it records, draws and shows."""
    calls = []
    shown = []
    made = fence_ring(2, rounds=1)

    def take_trace(cluster):
        calls.append("take")
        monkeypatch.setattr(timeline_module, "_last", made.trace())
        return timeline_module._last

    monkeypatch.setattr(timeline_module, "start_recording", lambda cluster: calls.append("start"))
    monkeypatch.setattr(timeline_module, "take_trace", take_trace)
    monkeypatch.setattr(timeline_module, "show_figure", shown.append)
    monkeypatch.setattr(timeline_module, "_last", None)
    monkeypatch.setattr(rma.notebook, "_current", None)
    return calls, shown


def test_the_magic_draws_the_cells_timeline_under_its_output(fake_recorder, monkeypatch, capsys):
    calls, shown = fake_recorder
    monkeypatch.setattr(rma.notebook, "_current", FakeCluster(2))
    rma.notebook._rma_cell("--timeline", "win.put(...)")
    assert calls == ["start", "take"] and len(shown) == 1 and items(shown[0], "rma-flow") == 2
    assert rma.notebook.last_trace() is not None  # what timeline() redraws
    assert items(rma.notebook.timeline(), "rma-flow") == 2
    rma.notebook._rma_cell("", "pass")  # without the option: nothing recorded
    assert calls == ["start", "take"] and len(shown) == 1


def test_the_magic_draws_what_was_recorded_when_the_cell_raised(fake_recorder, monkeypatch, capsys):
    calls, shown = fake_recorder
    monkeypatch.setattr(rma.notebook, "_current", FakeCluster(2, raising={1}))
    with pytest.raises(rma.notebook.RankError, match=r"rank\(s\) 1"):
        rma.notebook._rma_cell(" --timeline ", "raise ValueError('no')")
    assert calls == ["start", "take"] and len(shown) == 1


def test_the_magic_refuses_unknown_options_before_running_the_cell(fake_recorder, monkeypatch):
    calls, shown = fake_recorder
    cluster = FakeCluster(2)
    monkeypatch.setattr(rma.notebook, "_current", cluster)
    with pytest.raises(RMAError, match="unknown option '--timline'"):
        rma.notebook._rma_cell("--timline", "pass")
    assert cluster.cells == [] and calls == []


# ---- with the recorder: a real cluster's cell, recorded and drawn ----

RING = """
for step in range(3):
    with ring.fence():
        ring.put(np.full(4, step, np.int64), (comm.rank + 1) % comm.size)
"""


def trace_counts(trace):
    """What a trace holds, by the format's page: calls, epochs, waits, and flows from rank to rank."""
    events = trace["traceEvents"]
    calls = [
        e
        for e in events
        if e.get("ph") == "X" and e.get("cat") in ("rma", "collective", "message") and e.get("tid") == 0
    ]
    starts = {e["id"]: e["pid"] for e in events if e.get("ph") == "s" and e.get("cat") == "flow"}
    flows = sorted((starts[e["id"]], e["pid"]) for e in events if e.get("ph") == "f" and e["id"] in starts)
    epochs = [e for e in events if e.get("ph") == "b" and e.get("cat") == "epoch"]
    waits = [e for e in events if e.get("ph") == "X" and e.get("cat") == "wait"]
    return len(calls), len(epochs), len(waits), flows


@pytest.mark.parametrize("ranks", [1, 2, 4])
def test_a_recorded_fence_ring_draws_an_arrow_per_put(ranks, monkeypatch):
    shown = []
    monkeypatch.setattr(timeline_module, "show_figure", shown.append)
    monkeypatch.setattr(timeline_module, "_last", None)
    with rma.notebook.Cluster(ranks, env={"RMA_TIMEOUT": "30"}) as cluster:
        monkeypatch.setattr(rma.notebook, "_current", cluster)
        cluster.run("ring = rma.Window.allocate(comm, 4, np.int64)")
        rma.notebook._rma_cell("--timeline", RING)
        (figure,) = shown
        trace = rma.notebook.last_trace()
        calls, epochs, waits, flows = trace_counts(trace)
        # One arrow per put made, from each rank to its right neighbour.
        assert flows == sorted((rank, (rank + 1) % ranks) for rank in range(ranks) for _ in range(3))
        arrows = sorted((round(a._posA_posB[0][1]), round(a._posA_posB[1][1])) for a in artists(figure, "rma-flow"))
        assert arrows == flows
        assert rank_rows(figure) == [f"rank {r}" for r in range(ranks)]
        assert items(figure, "rma-call") == calls >= 3 * ranks * 3  # fence, put, fence per step
        assert items(figure, "rma-epoch") == epochs >= 3 * ranks
        assert items(figure, "rma-wait") == waits
        # The cells after it are not recorded; timeline() redraws the last one.
        rma.notebook._rma_cell("", "ring.free()")
        assert rma.notebook.last_trace() is trace and len(shown) == 1
        assert items(rma.notebook.timeline(), "rma-flow") == 3 * ranks


def test_a_recorded_cell_that_raised_is_drawn_then_raises(monkeypatch, capsys):
    shown = []
    monkeypatch.setattr(timeline_module, "show_figure", shown.append)
    with rma.notebook.Cluster(2, env={"RMA_TIMEOUT": "30"}) as cluster:
        monkeypatch.setattr(rma.notebook, "_current", cluster)
        cell = (
            "ring = rma.Window.allocate(comm, 4, np.int64)\n"
            "with ring.fence():\n"
            "    ring.put(np.full(4, 1, np.int64), 1 - comm.rank)\n"
            "ring.free()\n"
            "if comm.rank == 1:\n"  # after the collectives: no rank is left waiting in one
            "    raise ValueError('after the exchange')\n"
        )
        with pytest.raises(rma.notebook.RankError, match=r"rank\(s\) 1"):
            rma.notebook._rma_cell("--timeline", cell)
        (figure,) = shown
        assert items(figure, "rma-flow") == 2
        assert "ValueError: after the exchange" in capsys.readouterr().err
