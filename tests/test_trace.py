"""Issue 42, item 5: real jobs under `rmarun --trace`, their traces read by tests/trace_checker.py
(a reader written from docs/trace_format.md, not the writer's) and compared with what the
programs did by MPI's rules: a fence ring, a PSCW exchange with both neighbours and a counter
under lock(0), at 1-4 ranks on this host and at 2 ranks across the hosts of a test bed; a ring
that overflows RMA_TRACE_EVENTS; a job whose rank fails; a race that RMA_CHECK finds; and a job
without RMA_TRACE, which writes nothing.

Each job is run once per rank count and read by every test that asks about it (the checks are
many, the jobs few). Every job has a deadline (processes.run_in_own_group kills its group past
it), and every rank an RMA_TIMEOUT, so a hung job fails its tests rather than the run.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from processes import run_in_own_group
from testbed import bed_or_skip
from trace_checker import EPS, Facts, TraceError, check

HERE = os.path.dirname(os.path.abspath(__file__))
RMARUN = [sys.executable, "-m", "rma"]
RSH = f"{sys.executable} {os.path.join(HERE, 'testbed.py')} rsh"
WAIT = 60.0
RANK_TIMEOUT = "30"  # RMA_TIMEOUT: a rank blocked this long gives up, well before WAIT

# The known program: K fence epochs around a ring of puts, one PSCW exchange (each rank exposes
# its window to both neighbours and puts to each), and N rounds of a counter on rank 0 (a
# fetch_and_op under an exclusive lock, an accumulate under a shared one). Rank FAIL (-1: none)
# raises after its put of step K // 2. The lines the tests look for carry a `# <name>` comment.
PROGRAM = """\
import sys

import numpy as np
import rma

K, N, FAIL = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
comm = rma.init()
rank, size = comm.rank, comm.size
right, left = (rank + 1) % size, (rank - 1) % size

ring = rma.Window.allocate(comm, K, np.int64)  # ring window
for step in range(K):
    ring.fence()  # ring fence
    ring.put(np.array([rank * 100 + step]), right, step)  # ring put
    if rank == FAIL and step == K // 2:
        raise ValueError("failing on purpose")  # failure
ring.fence()  # last fence
assert ring.local.tolist() == [left * 100 + s for s in range(K)], ring.local

pscw = rma.Window.allocate(comm, 2, np.int64)  # pscw window
neighbours = sorted({left, right})
pscw.post(rma.Group(neighbours))  # post
pscw.start(neighbours)  # start
pscw.put(np.array([rank]), right, 0)  # put right
pscw.put(np.array([rank]), left, 1)  # put left
pscw.complete()  # complete
pscw.wait()  # wait
assert pscw.local.tolist() == [left, right], pscw.local

counter = rma.Window.allocate(comm, 2, np.int64)  # counter window
got, tickets = np.empty(1, np.int64), []
for _ in range(N):
    counter.lock(0, rma.LOCK_EXCLUSIVE)  # exclusive lock
    counter.fetch_and_op(1, got, 0, 0)  # fetch_and_op
    counter.unlock(0)  # exclusive unlock
    counter.lock(0, rma.LOCK_SHARED)  # shared lock
    counter.accumulate(np.array([2]), 0, 1, op=rma.SUM)  # accumulate
    counter.unlock(0)  # shared unlock
    tickets.append(int(got[0]))
comm.barrier()  # barrier
print("tickets", rank, *tickets, flush=True)
if rank == 0:
    print("counter", *counter.local.tolist(), flush=True)
"""
K, N = 4, 3
PROGRAM_NAME = "prog.py"


def line_of(comment: str, program: str = PROGRAM) -> int:
    """The line of program (from 1) that ends with `# comment`."""
    (found,) = [n for n, line in enumerate(program.splitlines(), 1) if line.endswith(f"  # {comment}")]
    return found


def site(comment: str) -> str:
    return f"{PROGRAM_NAME}:{line_of(comment)}"


@dataclass
class Traced:
    """A job run under rmarun --trace: its outcome, its trace as parsed JSON (None: no file), and
    the directory it ran in."""

    result: subprocess.CompletedProcess
    trace: dict | None
    where: Path
    hosts: int = 1

    def facts(self) -> Facts:
        assert self.trace is not None, f"no trace file; rmarun said:\n{self.result.stderr}"
        return check(self.trace)

    def ok(self) -> Facts:
        assert self.result.returncode == 0, self.result.stderr
        return self.facts()


def traced(where: Path, program: str, size: int, *args: str, rmarun: tuple[str, ...] = (), **env: str) -> Traced:
    """Run program (written to where/prog.py) on `size` ranks under rmarun --trace, in where."""
    where.mkdir(parents=True, exist_ok=True)
    (where / PROGRAM_NAME).write_text(program)
    trace_file = where / "trace.json"
    argv = [*RMARUN, "-n", str(size), *rmarun, "--trace", str(trace_file), str(where / PROGRAM_NAME), *args]
    environment = {k: v for k, v in os.environ.items() if not k.startswith("RMA_TRACE")}
    environment.update(RMA_TIMEOUT=RANK_TIMEOUT, **env)
    result = run_in_own_group(argv, timeout=WAIT, env=environment, cwd=str(where))
    trace = json.loads(trace_file.read_text()) if trace_file.exists() else None
    return Traced(result, trace, where)


# ---- the known program, on one host and across two ----

# (ranks, hosts): every rank count on this host, and one rank per host on the test bed.
PLACES = [(1, 1), (2, 1), (3, 1), (4, 1), (2, 2)]
PLACE_IDS = [f"{size}-ranks-{hosts}-host{'s' if hosts > 1 else ''}" for size, hosts in PLACES]


@pytest.fixture(scope="module")
def bed(request):
    yield from bed_or_skip(2)


@pytest.fixture(scope="module")
def known_jobs(tmp_path_factory):
    """The known program's job at each place, run on first use, then kept."""
    return {}


@pytest.fixture
def known(request, known_jobs, tmp_path_factory) -> Traced:
    size, hosts = request.param
    if (size, hosts) not in known_jobs:
        where = tmp_path_factory.mktemp(f"known-{size}-{hosts}")
        if hosts == 1:
            job = traced(where, PROGRAM, size, str(K), str(N), "-1")
        else:
            bed = request.getfixturevalue("bed")
            placement = ",".join(host.name for host in bed.hosts[:size])
            options = ("--rsh", RSH, "--store-host", bed.switch_address, "--host", placement)
            job = traced(where, PROGRAM, size, str(K), str(N), "-1", rmarun=options, **bed.rsh_environment())
            job.hosts = hosts
        known_jobs[(size, hosts)] = job
    return known_jobs[(size, hosts)]


def printed(result: subprocess.CompletedProcess) -> tuple[list[int], dict[int, list[int]]]:
    """What the known program printed: rank 0's counter, and each rank's tickets."""
    counter, tickets = [], {}
    for line in result.stdout.splitlines():
        word, *numbers = line.split()
        if word == "counter":
            counter = [int(n) for n in numbers]
        elif word == "tickets":
            tickets[int(numbers[0])] = [int(n) for n in numbers[1:]]
    return counter, tickets


def on_every_place(test=None):
    """Parametrize a test of the known job over PLACES."""

    def mark(test):
        places = [pytest.param(place, id=ident) for place, ident in zip(PLACES, PLACE_IDS)]
        return pytest.mark.parametrize("known", places, indirect=True)(test)

    return mark(test) if test is not None else mark


def windows(facts: Facts) -> dict[str, int]:
    """The known program's windows by role ("ring", "pscw", "counter"): the window number of
    the Window.allocate call at the role's line, the same on every rank."""
    found = {}
    for role in ("ring", "pscw", "counter"):
        numbers = {
            call.window
            for rank in range(facts.ranks)
            for call in facts.calls[rank]
            if call.name == "Window.allocate" and call.site == site(f"{role} window")
        }
        assert len(numbers) == 1, f"{role}: {numbers}"
        found[role] = numbers.pop()
    assert len(set(found.values())) == 3, found
    return found


@on_every_place
def test_the_trace_passes_the_checker_and_the_program_its_own_checks(known):
    facts = known.ok()
    size = facts.ranks
    counter, tickets = printed(known.result)
    assert counter == [N * size, 2 * N * size]
    # Each fetch_and_op under the exclusive lock took a ticket of its own.
    assert sorted(t for mine in tickets.values() for t in mine) == list(range(N * size))
    assert facts.missing_ranks == [] and set(facts.dropped.values()) == {0}
    assert sorted(facts.clock_offsets_us) == list(range(size))
    if known.hosts == 1:
        assert facts.hosts == dict.fromkeys(range(size), socket.gethostname())
    # Every rank left its records; none failed.
    assert all(facts.calls[rank] for rank in range(size))
    assert all(errors == [] for errors in facts.errors.values())
    # No parts are left beside the trace.
    assert sorted(p.name for p in known.where.iterdir()) == [PROGRAM_NAME, "trace.json"]


@on_every_place
def test_every_call_made_is_recorded_once(known):
    facts = known.ok()
    size, window = facts.ranks, windows(facts)
    for rank in range(size):
        mine = facts.calls[rank]

        def count(name, win, mine=mine):
            return sum(1 for call in mine if call.name == name and call.window == window[win])

        assert count("put", "ring") == K
        assert count("fence", "ring") == K + 1
        assert count("put", "pscw") == 2
        assert [count(name, "pscw") for name in ("post", "start", "complete", "wait")] == [1, 1, 1, 1]
        assert count("fetch_and_op", "counter") == N
        assert count("accumulate", "counter") == N
        assert count("lock", "counter") == count("unlock", "counter") == 2 * N
        assert [call.name for call in mine if call.cat == "collective"] == ["comm.barrier"]
    # The job's totals: puts made = K per rank in the ring, 2 per rank in the exchange.
    assert len(facts.data_calls(name="put", window=window["ring"])) == K * size
    assert len(facts.data_calls(name="put", window=window["pscw"])) == 2 * size
    assert len(facts.data_calls(name="fetch_and_op")) == len(facts.data_calls(name="accumulate")) == N * size
    assert len(facts.data_calls()) == (K + 2 + 2 * N) * size
    assert all(call.bytes == 8 for call in facts.data_calls())


@on_every_place
def test_every_data_call_lies_inside_an_epoch_of_its_window_that_reaches_its_target(known):
    facts = known.ok()
    size, window = facts.ranks, windows(facts)
    for call in facts.data_calls():
        # (an exposure epoch lets others in: it is not the caller's access)
        holding = [
            e for e in facts.epochs[call.rank] if e.holds(call) and e.kind != "exposure" and call.target in e.ranks
        ]
        kinds = {e.kind for e in holding}
        if call.window == window["ring"]:
            assert kinds == {"fence"}, call
        elif call.window == window["pscw"]:
            assert kinds == {"access"}, call
        else:
            lock = "exclusive" if call.name == "fetch_and_op" else "shared"
            assert [e.name for e in holding] == [f"lock {lock} 0"], call
    for rank in range(size):
        left, right = (rank - 1) % size, (rank + 1) % size
        epochs = facts.epochs[rank]
        fences = [e for e in epochs if e.window == window["ring"]]
        # Each fence ends the epoch before it and opens the next; the last is ended by nothing
        # the program calls (here: the job's end).
        assert [e.kind for e in fences] == ["fence"] * (K + 1)
        assert [e.site for e in fences] == [site("ring fence")] * K + [site("last fence")]
        assert all(a.end <= b.ts for a, b in zip(fences, fences[1:])), "fence epochs overlap"
        exchange = sorted((e.kind, e.ranks, e.site) for e in epochs if e.window == window["pscw"])
        group = tuple(sorted({left, right}))
        assert exchange == [("access", group, site("start")), ("exposure", group, site("post"))]
        locks = [(e.name, e.site) for e in epochs if e.window == window["counter"]]
        assert locks == [("lock exclusive 0", site("exclusive lock")), ("lock shared 0", site("shared lock"))] * N


@on_every_place
def test_flows_join_each_call_to_the_target_it_named(known):
    facts = known.ok()
    size, window = facts.ranks, windows(facts)
    assert len(facts.flows) == len(facts.data_calls())
    for flow in facts.flows:
        call = flow.call
        assert flow.name == call.name
        assert flow.origin == call.rank and flow.target == call.target, flow
        assert flow.arrival.origin == call.rank and flow.arrival.bytes == call.bytes == 8
        if call.window == window["ring"]:
            assert call.target == (call.rank + 1) % size
        elif call.window == window["counter"]:
            assert call.target == 0
    # Each rank received what its neighbours sent it, and rank 0 every counter operation.
    for rank in range(size):
        came = sorted((a.origin, a.call, a.window) for a in facts.arrivals[rank])
        left, right = (rank - 1) % size, (rank + 1) % size
        expected = [(left, "put", window["ring"])] * K + [(left, "put", window["pscw"]), (right, "put", window["pscw"])]
        if rank == 0:
            for origin in range(size):
                expected += [(origin, "fetch_and_op", window["counter"]), (origin, "accumulate", window["counter"])] * N
        assert came == sorted(expected)


@on_every_place
def test_arrivals_lie_in_the_call_that_completed_them_and_never_before_their_origin_call(known):
    facts = known.ok()
    window = windows(facts)
    completing = {window["ring"]: "fence", window["pscw"]: "wait", window["counter"]: "unlock"}

    def calls(rank, name, win):
        return [c for c in facts.calls[rank] if c.name == name and c.window == win]

    for flow in facts.flows:
        call, arrival = flow.call, flow.arrival
        assert arrival.completed_by == completing[call.window], flow
        # The call that completed it, counted on each rank's own records (no clock compared):
        # the target's fence after the origin's fences so far (they end the same epoch on every
        # rank), the target's wait, or the origin's next unlock.
        if call.window == window["ring"]:
            opened = sum(1 for c in calls(flow.origin, "fence", call.window) if c.ts < call.ts)
            closing = calls(flow.target, "fence", call.window)[opened]
        elif call.window == window["pscw"]:
            (closing,) = calls(flow.target, "wait", call.window)
        else:
            closing = next(c for c in calls(flow.origin, "unlock", call.window) if c.ts >= call.end)
        assert closing.ts - EPS <= arrival.ts <= closing.end + EPS, (flow, closing, facts.clock_offsets_us)
        # Aligned clocks: what the target's side completed cannot have completed before the
        # origin's call began (by MPI's rules it follows the origin's closing call too).
        assert flow.finish >= call.ts and arrival.ts >= call.ts, (flow, facts.clock_offsets_us)


@on_every_place
def test_aligned_clocks_keep_the_order_that_the_synchronizations_fix(known):
    # What MPI's rules order across ranks must come in that order on the trace's one clock
    # (each rank's offset to rank 0, measured at init): read from the calls themselves, not from
    # the arrivals the writer placed.
    facts = known.ok()
    size, window = facts.ranks, windows(facts)
    offsets = facts.clock_offsets_us

    def calls(rank, name, win=None):
        return [c for c in facts.calls[rank] if c.name == name and (win is None or c.window == window[win])]

    # The barrier: nobody leaves before everybody came.
    barriers = [calls(rank, "comm.barrier")[0] for rank in range(size)]
    assert max(c.ts for c in barriers) <= min(c.end for c in barriers) + EPS, (barriers, offsets)
    for rank in range(size):
        left = (rank - 1) % size
        # Fence j + 1 closes epoch j, into which `left` put: it ends only once left has put and
        # come to its own fence j + 1.
        mine, theirs = calls(rank, "fence", "ring"), calls(left, "fence", "ring")
        puts = calls(left, "put", "ring")
        for j in range(K):
            assert mine[j + 1].end + EPS >= max(theirs[j + 1].ts, puts[j].ts), (rank, j, offsets)
        # PSCW: my wait ends after each neighbour began its complete; its complete ends after I
        # posted (its puts to me need my exposure).
        for neighbour in {left, (rank + 1) % size}:
            assert calls(rank, "wait", "pscw")[0].end + EPS >= calls(neighbour, "complete", "pscw")[0].ts, offsets
            assert calls(neighbour, "complete", "pscw")[0].end + EPS >= calls(rank, "post", "pscw")[0].ts, offsets
    # The exclusive lock: ordered by the tickets its fetch_and_op took, each holder's release
    # (its unlock's start) comes before the next holder's unlock ends. That unlock waits for its
    # call's reply, which the target sends only once it granted the lock, after the release came.
    # (A lock on another host returns at once: its request rides the epoch's first call.)
    _, tickets = printed(known.result)
    epochs = sorted(
        (tickets[rank][i], unlock)
        for rank in range(size)
        for i, unlock in enumerate(calls(rank, "unlock", "counter")[::2])
    )
    assert [t for t, _ in epochs] == list(range(N * size)), (epochs, offsets)
    for (_, earlier), (_, later) in zip(epochs, epochs[1:]):
        assert earlier.ts <= later.end + EPS, (earlier, later, offsets)


@on_every_place
def test_sites_name_the_programs_lines(known):
    facts = known.ok()
    window = windows(facts)
    expected = {
        ("put", window["ring"]): {site("ring put")},
        ("fence", window["ring"]): {site("ring fence"), site("last fence")},
        ("put", window["pscw"]): {site("put right"), site("put left")},
        ("fetch_and_op", window["counter"]): {site("fetch_and_op")},
        ("accumulate", window["counter"]): {site("accumulate")},
        ("comm.barrier", None): {site("barrier")},
    }
    for rank in range(facts.ranks):
        seen: dict[tuple, set[str]] = {}
        for call in facts.calls[rank]:
            seen.setdefault((call.name, call.window), set()).add(call.site)
        for key, sites in expected.items():
            assert seen[key] == sites, key
        # The two PSCW puts: to the right first, then to the left.
        puts = [c for c in facts.calls[rank] if c.name == "put" and c.window == window["pscw"]]
        assert [c.site for c in puts] == [site("put right"), site("put left")]
        assert [c.target for c in puts] == [(rank + 1) % facts.ranks, (rank - 1) % facts.ranks]


@on_every_place
def test_waits_name_real_ranks(known):
    facts = known.ok()
    size = facts.ranks
    for rank in range(size):
        for wait in facts.waits[rank]:
            assert wait.ranks and set(wait.ranks) <= set(range(size)) - {rank}, wait
            assert wait.call is not None and wait.call.ts <= wait.ts and wait.end <= wait.call.end
            if wait.call.name in ("fence", "comm.barrier"):
                # A fence or a barrier waits for the ranks that have not come yet: others.
                assert rank not in wait.ranks
    if size == 1:
        assert all(waits == [] for waits in facts.waits.values())
    else:
        # Somebody waited in the job (the ranks start at different times: the first window's
        # allocation, a collective, waits for the late ones).
        assert any(facts.waits.values())


@pytest.mark.parametrize("known", [(2, 2)], ids=["2-ranks-2-hosts"], indirect=True)
def test_across_hosts_the_ranks_hosts_differ_and_flows_cross_them(known, bed):
    facts = known.ok()
    names = [host.name for host in bed.hosts]
    assert facts.hosts == {0: names[0], 1: names[1]}
    assert facts.process_names == {0: f"rank 0 ({names[0]})", 1: f"rank 1 ({names[1]})"}
    assert set(facts.clock_offsets_us) == {0, 1} and facts.clock_offsets_us[0] == 0
    crossing = [f for f in facts.flows if facts.hosts[f.origin] != facts.hosts[f.target]]
    # Both ring directions and rank 1's counter operations cross; so do the exchange's puts.
    assert len(crossing) == 2 * K + 2 * 2 + 2 * N
    assert all(f.finish >= f.call.ts for f in crossing)


# ---- a ring that outgrows its records ----

MANY_CALLS = """\
import numpy as np
import rma

CALLS = 200
comm = rma.init()
right = (comm.rank + 1) % comm.size
win = rma.Window.allocate(comm, CALLS, np.int64)
win.fence()  # first fence
for i in range(CALLS):
    win.put(np.array([i]), right, i)  # put
win.fence()  # last fence
assert win.local.tolist() == list(range(CALLS))
win.free()
"""


@pytest.mark.parametrize("size", [1, 2, 4])
def test_a_full_ring_says_what_it_dropped_and_still_merges_whole(tmp_path, size):
    job = traced(tmp_path, MANY_CALLS, size, RMA_TRACE_EVENTS="16")
    facts = job.ok()  # (the checker also sees each rank's "dropped N records" at its first record)
    assert facts.capacity == 16
    for rank in range(size):
        assert facts.dropped[rank] > 0
        assert [i.name for i in facts.instants[rank]] == [f"dropped {facts.dropped[rank]} records"]
        # What is kept is the newest: the last calls of the program, no more than the ring holds.
        assert 0 < len(facts.calls[rank]) <= 16
        assert facts.calls[rank][-1].name == "free"
    # Of 200 puts per rank, every one kept still has its flow and arrival, and none is made up.
    kept = facts.data_calls()
    assert 0 < len(kept) < 200 * size and len(facts.flows) <= len(kept)
    assert all(call.site == f"{PROGRAM_NAME}:{line_of('put', MANY_CALLS)}" for call in kept)
    fences = {f"{PROGRAM_NAME}:{line_of(which, MANY_CALLS)}" for which in ("first fence", "last fence")}
    # An epoch whose opening fence was dropped has no site (null), none made up from a put.
    assert all(epoch.site is None or epoch.site in fences for epochs in facts.epochs.values() for epoch in epochs)


# ---- a failing rank ----


@pytest.mark.parametrize("size", [2, 3, 4])
def test_a_failed_jobs_trace_has_every_rank_and_marks_the_failure(tmp_path, size):
    failing = size - 1
    job = traced(tmp_path, PROGRAM, size, str(K), str(N), str(failing))
    assert job.result.returncode != 0
    assert (tmp_path / "trace.json").exists(), job.result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == [PROGRAM_NAME, "trace.json"]
    facts = job.facts()
    assert facts.missing_ranks == []
    window = windows_of_ring(facts)
    for rank in range(size):
        # Every rank's track is there, with the puts it made before the failure: steps 0..K//2.
        puts = [c for c in facts.calls[rank] if c.name == "put" and c.window == window]
        assert len(puts) == K // 2 + 1, rank
        errors = facts.errors[rank]
        if rank == failing:
            assert [(e.name, e.cat) for e in errors] == [("ValueError", "error")]
            assert "failing on purpose" in errors[0].args["message"]
        else:
            assert errors and {e.name for e in errors} <= {"PeerError", "Stopped"}, errors
            assert all(e.cat == "error" for e in errors)


def windows_of_ring(facts: Facts) -> int:
    (number,) = {
        c.window
        for cs in facts.calls.values()
        for c in cs
        if c.name == "Window.allocate" and c.site == site("ring window")
    }
    return number


# ---- a race that RMA_CHECK finds ----

RACY = """\
import numpy as np
import rma

comm = rma.init()
last = comm.size - 1
win = rma.Window.allocate(comm, 1, np.int64)
win.fence()
if comm.rank < 2:
    win.put(np.array([comm.rank]), last, 0)  # racy put
win.fence()  # closing fence
win.free()
"""


@pytest.mark.racy
@pytest.mark.parametrize("size", [2, 3])
def test_a_conflict_that_rma_check_finds_is_in_the_trace(tmp_path, size):
    job = traced(tmp_path, RACY, size, RMA_CHECK="1")
    assert job.result.returncode != 0
    assert "ConflictError" in job.result.stderr
    facts = job.facts()
    conflicts = [e for errors in facts.errors.values() for e in errors if e.name == "ConflictError"]
    assert conflicts, facts.errors
    assert all(e.cat == "error" and "conflicting accesses" in e.args["message"] for e in conflicts)
    # Both puts of the race are recorded, to the same rank.
    puts = facts.data_calls(name="put")
    assert sorted(c.rank for c in puts) == [0, 1]
    assert {c.target for c in puts} == {size - 1}
    assert {c.site for c in puts} == {f"{PROGRAM_NAME}:{line_of('racy put', RACY)}"}


# ---- no RMA_TRACE ----


@pytest.mark.parametrize("setting", ["unset", "blank"])
def test_without_rma_trace_nothing_is_written(tmp_path, setting):
    (tmp_path / PROGRAM_NAME).write_text(PROGRAM)
    environment = {k: v for k, v in os.environ.items() if not k.startswith("RMA_TRACE")}
    if setting == "blank":
        environment["RMA_TRACE"] = " "
    argv = [*RMARUN, "-n", "2", str(tmp_path / PROGRAM_NAME), str(K), str(N), "-1"]
    result = run_in_own_group(argv, timeout=WAIT, env=dict(environment, RMA_TIMEOUT=RANK_TIMEOUT), cwd=str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert printed(result)[0] == [2 * N, 4 * N]
    assert "trace" not in result.stderr
    assert [p.name for p in tmp_path.iterdir()] == [PROGRAM_NAME]


# ---- messages ----

MESSAGES = """\
import sys
import rma
comm = rma.init()
right, left = (comm.rank + 1) % comm.size, (comm.rank - 1) % comm.size
for step in range(3):
    if comm.rank % 2 == 0:
        comm.send(("step", step, comm.rank), dest=right, tag=step)  # send
        got = comm.recv(source=left, tag=step)  # recv
    else:
        got = comm.recv(source=left, tag=step)
        comm.send(("step", step, comm.rank), dest=right, tag=step)
    assert got == ("step", step, left), got
"""


@pytest.mark.parametrize("size", [1, 2, 3])
def test_messages_are_calls_with_their_peer_and_bytes_and_hold_their_waits(tmp_path, size):
    job = traced(tmp_path, MESSAGES, size)
    facts = job.ok()  # (the checker: every wait lies inside a call, a recv's among them)
    for rank in range(size):
        mine = facts.calls[rank]
        sends = [c for c in mine if c.name == "comm.send"]
        receives = [c for c in mine if c.name == "comm.recv"]
        assert len(sends) == len(receives) == 3
        assert {c.cat for c in sends + receives} == {"message"}
        assert {c.args["target"] for c in sends} == {(rank + 1) % size}
        assert {c.args["target"] for c in receives} == {(rank - 1) % size}
        assert all(c.args["bytes"] > 0 for c in sends + receives)
        # Pickled alike, each message is as long at both ends.
        assert {c.args["bytes"] for c in sends} == {c.args["bytes"] for c in receives}


# ---- a compressed trace ----


def test_a_trace_named_gz_is_written_compressed_and_read_back_by_every_reader(tmp_path):
    """FILE.gz: rmarun writes gzip (Perfetto opens it), and rma.trace.load, python -m rma.trace
    and the notebook's timeline read it as they read plain JSON."""
    import gzip

    from rma.notebook import timeline
    from rma.trace import load

    (tmp_path / PROGRAM_NAME).write_text(PROGRAM)
    trace_file = tmp_path / "trace.json.gz"
    environment = {k: v for k, v in os.environ.items() if not k.startswith("RMA_TRACE")}
    argv = [*RMARUN, "-n", "2", "--trace", str(trace_file), str(tmp_path / PROGRAM_NAME), str(K), str(N), "-1"]
    result = run_in_own_group(argv, timeout=WAIT, env=dict(environment, RMA_TIMEOUT=RANK_TIMEOUT), cwd=str(tmp_path))
    assert result.returncode == 0, result.stderr
    with gzip.open(trace_file, "rt") as source:  # (gzip, or this raises)
        trace = json.load(source)
    facts = check(trace)
    assert load(trace_file) == trace
    assert len(facts.flows) == len(facts.data_calls()) > 0
    summary = run_in_own_group(
        [sys.executable, "-m", "rma.trace", str(trace_file)], timeout=WAIT, env=environment, cwd=str(tmp_path)
    )
    assert summary.returncode == 0 and "rank 1" in summary.stdout, summary.stderr
    figure = timeline(str(trace_file))
    assert len([a for a in figure.findobj() if a.get_gid() == "rma-flow"]) == len(facts.flows)


# ---- the checker refuses what breaks the format ----


def _broken_copies(trace: dict) -> dict[str, dict]:
    """Copies of a good trace, each broken in one way the format forbids."""
    events = trace["traceEvents"]

    def without(pick) -> dict:
        drop = next(i for i, e in enumerate(events) if pick(e))
        return dict(trace, traceEvents=events[:drop] + events[drop + 1 :])

    def changed(pick, **fields) -> dict:
        at = next(i for i, e in enumerate(events) if pick(e))
        return dict(trace, traceEvents=[*events[:at], dict(events[at], **fields), *events[at + 1 :]])

    put = next(e for e in events if e["ph"] == "X" and e["name"] == "put")
    after = min(
        (
            e
            for e in events
            if e["ph"] == "X"
            and (e["pid"], e["tid"]) == (put["pid"], 0)
            and e["dur"] > 1.0
            and e["ts"] >= put["ts"] + put["dur"]
        ),
        key=lambda e: e["ts"],
    )
    into_the_next = after["ts"] - put["ts"] + after["dur"] / 2
    return {
        "an epoch without its end": without(lambda e: e["ph"] == "e"),
        "a flow without its finish": without(lambda e: e["ph"] == "f"),
        "a put without its flow": without(lambda e: e["ph"] == "s"),
        "an arrival without its flow": without(lambda e: e["ph"] == "X" and e["cat"] == "arrival"),
        "a slice without dur": changed(lambda e: e["ph"] == "X", dur=None),
        "a negative dur": changed(lambda e: e["ph"] == "X", dur=-1.0),
        "a flow finish outside its arrival": changed(lambda e: e["ph"] == "f", ts=0.0),
        "a flow finish without bp": changed(lambda e: e["ph"] == "f", bp=None),
        "a put that overlaps its neighbour": changed(lambda e: e is put, dur=into_the_next),
        "an epoch that ends before it begins": changed(lambda e: e["ph"] == "e", ts=0.0),
        "a rank outside the job": changed(lambda e: e["ph"] == "X", pid=99),
        "an instant without scope": dict(
            trace, traceEvents=[*events, {"ph": "i", "name": "x", "cat": "error", "pid": 0, "tid": 0, "ts": 1.0}]
        ),
        "otherData without dropped": dict(
            trace, otherData={k: v for k, v in trace["otherData"].items() if k != "dropped"}
        ),
    }


@pytest.mark.parametrize("known", [(2, 1)], ids=["2-ranks-1-host"], indirect=True)
def test_the_checker_refuses_a_broken_trace(known):
    trace = known.trace
    check(trace)
    for what, broken in _broken_copies(trace).items():
        with pytest.raises(TraceError):
            check(broken)
            pytest.fail(f"the checker took {what}")
