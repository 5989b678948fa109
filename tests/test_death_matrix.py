"""Issue 13's peer-death matrix: every blocking call x every way a rank dies x 2 and 4 ranks.

In each cell one rank (the victim) dies while the others (the waiters) are blocked in the call,
or keep making it when it would not block; each waiter must get PeerError naming the victim
within 10 s, then end normally (interpreter exit finalizes) leaving nothing of its own in
/dev/shm. The transport is the environment's: dev.sh runs this file again with
RMA_TRANSPORT=libfabric on one cell in two (RMA_DEATH_SAMPLE=2); its ASan pass runs one cell in
three (RMA_DEATH_SAMPLE=3) and its main pass the other two (RMA_DEATH_SAMPLE=!3).

A cell is a job of its own, started by hand (the pytest plugin counts a dying rank as a failed
test). The jobs are short but mostly asleep, so RMA_DEATH_JOBS (3 by default) of them run at
once; the first test of the file runs every selected cell and the others read their outcome.
"""

from __future__ import annotations

import dataclasses
import os
import re
import signal
import subprocess
import textwrap
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from handmade_ranks import start_ranks
from rma._job.shm_files import cleanup_shm_files
from rma._job.store_server import StoreServer

DEADLINE = 10.0  # seconds from the death (at most) to each waiter's PeerError
SIZES = [2, 4]


@dataclasses.dataclass(frozen=True)
class Call:
    """`setup` runs on every rank first (V is the victim's rank, the last one), then `call` on
    each waiter: every rank but the victim, or rank 0 only if `only_rank_0`. The PeerError must
    name the user's call: `names` (a regular expression), or the call must return (finalize)
    if `names` is None."""

    name: str
    call: str
    names: str | None
    setup: str = ""
    only_rank_0: bool = False


WINDOW = "win = rma.Window.allocate(comm, 4, np.int64)"
# The waiters hold a lock on the victim, then keep calling into it: on shared memory nothing
# blocks there, so the loop goes on until the death is known (the error names the call of the
# loop that learned it).
LOCKED_ON_VICTIM = WINDOW + "\nif comm.rank != V: win.lock(V, rma.LOCK_SHARED)"
ONE = "np.ones(1, np.int64)"
RESULT = "np.zeros(1, np.int64)"
# The victim holds rank 0's exclusive lock when it dies; the waiters queue for it. (A lock on
# another rank through libfabric rides the epoch's first call: it is held once that completed.)
HOLDER = WINDOW + "\nif comm.rank == V: win.lock(0); win.get(np.zeros(1, np.int64), 0); win.flush(0)"
# What waits for that lock: the lock itself on shared memory (and rank 0's own), else the call
# that its request rode (the flush waits for the put's reply, which comes after the grant).
QUEUED = "; win.put(np.ones(1, np.int64), 0); win.flush(0)"
MUTEX_HELD = "mutex = rma.sync.Mutex(comm)\nif comm.rank == V: mutex.acquire()"


def repeat(body: str) -> str:
    return f"while True:\n    {body}\n    time.sleep(0.01)"


CALLS = [
    # ---- the communicator ----
    Call("barrier", "comm.barrier()", r"comm\.barrier"),
    Call("bcast from the victim", "comm.bcast(None, root=V)", r"comm\.bcast"),
    Call("allgather", "comm.allgather(comm.rank)", r"comm\.allgather"),
    Call("gather to rank 0", "comm.gather(comm.rank, root=0)", r"comm\.gather", only_rank_0=True),
    Call("recv from the victim", "comm.recv(V)", r"comm\.recv"),
    Call("send to the victim", repeat("comm.send(b'x' * 100, V)"), r"comm\.send to rank \d"),
    Call("split", "comm.split(0)", r"comm\.split"),
    Call("split_type", 'comm.split_type("host")', r"comm\.split_type"),
    Call("recv from any source", "comm.recv(rma.ANY_SOURCE, rma.ANY_TAG)", r"comm\.recv \(waiting for any rank"),
    Call("irecv from the victim, then wait", "comm.irecv(V).wait()", r"comm\.irecv request's wait"),
    Call("sendrecv with the victim", "comm.sendrecv(1, V, source=V)", r"comm\.sendrecv \(waiting for rank \d"),
    Call("allreduce", "comm.allreduce(comm.rank)", r"comm\.allreduce"),
    Call("Allreduce of an array", "comm.Allreduce(np.ones(4))", r"comm\.Allreduce"),
    Call("scatter from the victim", "comm.scatter(None, root=V)", r"comm\.scatter"),
    Call("alltoall", "comm.alltoall(list(range(comm.size)))", r"comm\.alltoall"),
    Call("finalize", "rma.finalize()", None),
    # ---- collective window calls ----
    Call("Window.allocate", "rma.Window.allocate(comm, 4, np.int64)", r"Window\.allocate "),
    Call("Window.create", "rma.Window.create(comm, np.zeros(4))", r"Window\.create "),
    Call("Window.allocate_shared", "rma.Window.allocate_shared(comm, 4, np.int64)", r"Window\.allocate_shared"),
    Call("Window.create_dynamic", "rma.Window.create_dynamic(comm)", r"Window\.create_dynamic"),
    Call("free", "win.free()", r"win\.free of window", setup=WINDOW),
    Call("Counter()", "rma.sync.Counter(comm)", r"Window\.allocate "),
    Call("Mutex()", "rma.sync.Mutex(comm)", r"Window\.allocate "),
    # ---- active target ----
    Call("fence", "win.fence()", r"win\.fence", setup=WINDOW),
    Call("fence closing a put", f"win.put({ONE}, V); win.fence()", r"win\.(put|fence)", setup=WINDOW + "\nwin.fence()"),
    Call("wait for the victim's access", "win.post([V]); win.wait()", r"win\.wait ", setup=WINDOW),
    Call("test for the victim's access", "win.post([V])\n" + repeat("win.test()"), r"win\.test ", setup=WINDOW),
    Call(
        "start and complete to the victim",
        f"win.start([V]); win.put({ONE}, V); win.complete()",
        r"win\.(put|complete)",
        setup=WINDOW,
    ),
    # ---- passive target: the victim holds a lock the waiters want ----
    Call("lock held by the victim", "win.lock(0)" + QUEUED, r"win\.(lock|flush) to rank 0", setup=HOLDER),
    Call(
        "shared lock held by the victim",
        "win.lock(0, rma.LOCK_SHARED)" + QUEUED,
        r"win\.(lock|flush) to rank 0",
        setup=HOLDER,
    ),
    Call("lock_all with the victim holding one", "win.lock_all()" + QUEUED, r"win\.(lock_all|flush)", setup=HOLDER),
    Call("Mutex.acquire held by the victim", "mutex.acquire()", r"win\.lock ", setup=MUTEX_HELD),
    Call(
        "Mutex.acquire(blocking=False) held by the victim",
        repeat("mutex.acquire(blocking=False)"),
        r"win\.lock ",
        setup=MUTEX_HELD,
    ),
    Call(
        "Counter.next with the victim holding its lock",
        "counter.next()",
        r"win\.(lock|unlock) ",
        setup="counter = rma.sync.Counter(comm, root=0)\nif comm.rank == V: counter._window._lock_at_once(0)",
    ),
    # ---- passive target: calls aimed at the victim ----
    Call("lock of the victim", repeat("win.lock(V); win.unlock(V)"), r"win\.(lock|unlock) to rank \d", setup=WINDOW),
    Call(
        "lock_all including the victim",
        repeat("win.lock_all(); win.unlock_all()"),
        r"win\.(lock_all|unlock_all)",
        setup=WINDOW,
    ),
    Call("put and flush", repeat(f"win.put({ONE}, V); win.flush(V)"), r"win\.(put|flush) ", setup=LOCKED_ON_VICTIM),
    Call("get and flush", repeat(f"win.get({RESULT}, V); win.flush(V)"), r"win\.(get|flush) ", setup=LOCKED_ON_VICTIM),
    Call(
        "accumulate and flush_local",
        repeat(f"win.accumulate({ONE}, V); win.flush_local(V)"),
        r"win\.(accumulate|flush_local) ",
        setup=LOCKED_ON_VICTIM,
    ),
    Call(
        "get_accumulate and flush_all",
        repeat(f"win.get_accumulate({ONE}, {RESULT}, V); win.flush_all()"),
        r"win\.(get_accumulate|flush_all) ",
        setup=LOCKED_ON_VICTIM,
    ),
    Call(
        "fetch_and_op",
        repeat(f"win.fetch_and_op({ONE}, {RESULT}, V); win.flush_local_all()"),
        r"win\.(fetch_and_op|flush_local_all) ",
        setup=LOCKED_ON_VICTIM,
    ),
    Call(
        "compare_and_swap",
        repeat(f"win.compare_and_swap({ONE}, {ONE}, {RESULT}, V); win.flush(V)"),
        r"win\.(compare_and_swap|flush) ",
        setup=LOCKED_ON_VICTIM,
    ),
    Call(
        "rget and wait", repeat(f"win.rget({RESULT}, V).wait()"), r"win\.(rget|Request\.wait) ", setup=LOCKED_ON_VICTIM
    ),
    Call(
        "rput and test",
        repeat(f"request = win.rput({ONE}, V)\n    while not request.test(): pass"),
        r"win\.(rput|Request\.test) ",
        setup=LOCKED_ON_VICTIM,
    ),
    # The put went before the death; the unlock that completes it comes after.
    Call(
        "unlock of the victim",
        "time.sleep(2); win.unlock(V)",
        r"win\.unlock to rank \d",
        setup=LOCKED_ON_VICTIM + f"\nif comm.rank != V: win.put({ONE}, V)",
    ),
    Call(
        "unlock_all",
        "time.sleep(2); win.unlock_all()",
        r"win\.unlock_all",
        setup=WINDOW + f"\nif comm.rank != V: win.lock_all(); win.put({ONE}, V)",
    ),
    Call(
        "Counter.next at the victim",
        repeat("counter.next()"),
        r"win\.(lock|unlock|fetch_and_op) to rank \d",
        setup="counter = rma.sync.Counter(comm, root=V)",
    ),
    # ---- waiting for memory the victim would write ----
    Call("wait_until", 'win.wait_until(0, "==", 1)', r"win\.wait_until", setup=WINDOW),
    Call("wait_until with a timeout", 'win.wait_until(0, "==", 1, timeout=60)', r"win\.wait_until", setup=WINDOW),
]

DEATHS = {
    "SIGKILL": ("os.kill(os.getpid(), signal.SIGKILL)", lambda status: status == -signal.SIGKILL),
    "exit0": ("os._exit(0)", lambda status: status == 0),  # no finalize: a death all the same
    # A real invalid access (ASan turns it into an exit with status 1).
    "segfault": ("import ctypes; ctypes.string_at(0)", lambda status: status != 0),
}

RANK_CODE = """
import faulthandler, os, signal, sys, time
faulthandler.register(signal.SIGUSR1, all_threads=True)  # a cell that times out shows its stacks
import numpy as np
import rma
comm = rma.init()
V = comm.size - 1
WAITERS = {waiters}
{setup}
comm.barrier()
if comm.rank == V:
    time.sleep(0.3)  # the waiters are in the call by then
    {death}
if comm.rank in WAITERS:
    start = time.monotonic()
    try:
{call}
    except rma.PeerError as error:
        print(f"{{time.monotonic() - start:.2f}} PeerError", error, flush=True)
        sys.exit(0)  # a normal exit, which finalizes
    except BaseException as error:
        print(f"{{time.monotonic() - start:.2f}}", type(error).__name__, error, flush=True)
        os._exit(1)
    print(f"{{time.monotonic() - start:.2f}} returned", flush=True)
    sys.exit(0)
time.sleep(120)  # a bystander: ended by the test once the waiters are done
"""


@dataclasses.dataclass
class Outcome:
    statuses: list[int | None]
    outs: list[str]
    errs: list[str]
    waiters: list[int]
    left_in_shm: dict[int, list[str]]  # a waiter's own files still there after its normal exit
    timed_out: bool


def rank_code(call: Call, death: str) -> str:
    return RANK_CODE.format(
        waiters="[0]" if call.only_rank_0 else "[r for r in range(comm.size) if r != V]",
        setup=call.setup,
        death=DEATHS[death][0],
        call=textwrap.indent(call.call, " " * 8),
    )


def shm_names_of(pid: int) -> list[str]:
    return [n for n in os.listdir("/dev/shm") if n.startswith((f"{pid}:", f"{pid}-", f"rma-{pid}-"))]


def run_cell(call: Call, death: str, size: int) -> Outcome:
    store = StoreServer(size=size)
    store.start()
    processes: list[subprocess.Popen] = []
    try:
        environment = {"RMA_TIMEOUT": "60", "RMA_HANG_REPORT": "20"}  # (a stuck cell says where)
        victim_environment = {**environment}
        if "ASAN_OPTIONS" in os.environ:
            # The victim's crash is the cell's point: under the sanitizers its report need not be
            # symbolized, which took it past the waiters' 1 s of sleep before an unlock (CI; now 2 s).
            victim_environment["ASAN_OPTIONS"] = os.environ["ASAN_OPTIONS"] + ":symbolize=0"
        processes = start_ranks(
            rank_code(call, death),
            size,
            store,
            extra_env=lambda rank: victim_environment if rank == size - 1 else environment,
            rank_variable="RMA_RANK",
        )
        victim = size - 1
        waiters = [0] if call.only_rank_0 else [r for r in range(size) if r != victim]
        outs, errs = [""] * size, [""] * size
        left: dict[int, list[str]] = {}
        timed_out = False
        deadline = time.monotonic() + 45
        for rank in [victim, *waiters]:
            try:
                outs[rank], errs[rank] = processes[rank].communicate(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                timed_out = True
                break
            if rank != victim:
                left[rank] = shm_names_of(processes[rank].pid)
        statuses = [p.poll() for p in processes]
        if timed_out:
            for process in processes:
                if process.poll() is None:
                    process.send_signal(signal.SIGUSR1)
            time.sleep(1.0)
        for rank, process in enumerate(processes):  # bystanders, and ranks that outlived the deadline
            if process.returncode is None or not process.stdout.closed:
                process.kill()
                outs[rank], errs[rank] = process.communicate()
        return Outcome(statuses, outs, errs, waiters, left, timed_out)
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.communicate()
        cleanup_shm_files(p.pid for p in processes)  # what a launcher does for the dead
        store.close()


CELLS = [(call, death, size) for call in CALLS for death in DEATHS for size in SIZES]
CELL_IDS = [f"{call.name}-{death}-{size}ranks" for call, death, size in CELLS]


def sampled(index: int) -> bool:
    """Whether cell `index` runs under RMA_DEATH_SAMPLE=k (one cell in k) or !k (the others):
    the sum of the call's, the death's and the size's positions picks it, so that the chosen
    deaths and sizes rotate from call to call and every death and size still meets every kind
    of call. (./dev.sh test's ASan pass runs 3 and its main pass !3: between them, every cell
    once on the default transport.)"""
    call, rest = divmod(index, len(DEATHS) * len(SIZES))
    death, size = divmod(rest, len(SIZES))
    sample = os.environ.get("RMA_DEATH_SAMPLE", "1")
    chosen = (call + death + size) % int(sample.lstrip("!")) == 0
    return not chosen if sample.startswith("!") else chosen


_outcomes: dict[str, Outcome] = {}
_run_lock = threading.Lock()


@pytest.fixture(scope="module")
def outcomes(request) -> dict[str, Outcome]:
    """Run every cell selected in this session at once, RMA_DEATH_JOBS in parallel."""
    with _run_lock:
        wanted = [
            item.callspec.params["cell"]
            for item in request.session.items
            if getattr(item, "module", None) is request.module and hasattr(item, "callspec")
        ]
        todo = [cell for cell in wanted if cell not in _outcomes]
        by_id = dict(zip(CELL_IDS, CELLS, strict=True))
        jobs = int(os.environ.get("RMA_DEATH_JOBS", "3"))
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            for cell_id, outcome in zip(todo, pool.map(lambda c: run_cell(*by_id[c]), todo), strict=True):
                _outcomes[cell_id] = outcome
    return _outcomes


@pytest.mark.parametrize("cell", [c for i, c in enumerate(CELL_IDS) if sampled(i)])
def test_a_death_ends_the_call_with_peer_error(cell, outcomes):
    call, death, size = dict(zip(CELL_IDS, CELLS, strict=True))[cell]
    outcome = outcomes[cell]
    victim = size - 1
    report = "\n".join(
        f"rank {r}: status {s} out {o!r} err {e[-(6000 if outcome.timed_out else 1500) :]!r}"
        for r, (s, o, e) in enumerate(zip(outcome.statuses, outcome.outs, outcome.errs, strict=True))
    )
    assert not outcome.timed_out, f"a rank still runs after 45 s\n{report}"
    assert DEATHS[death][1](outcome.statuses[victim]), report
    for rank in outcome.waiters:
        assert outcome.statuses[rank] == 0, report
        seconds, kind, message = (outcome.outs[rank].strip() + "  ").split(" ", 2)
        if call.names is None:
            assert kind == "returned", report
        else:
            assert kind == "PeerError", report
            assert f"rank {victim} died" in message, report
            assert re.search(call.names, message), f"the error does not name the call ({call.names})\n{report}"
        assert float(seconds) < DEADLINE, report
        assert not outcome.left_in_shm[rank], f"rank {rank} left {outcome.left_in_shm[rank]}\n{report}"
