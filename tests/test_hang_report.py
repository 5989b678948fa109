"""Issue 17: a blocked call that goes on waiting says so once on stderr after RMA_HANG_REPORT
seconds, naming the call and whom it waits for, then goes on waiting (and succeeds when the
late rank comes). Ranks are started by hand to read each one's stderr."""

import os
import re

import pytest

from handmade_ranks import finish, start_ranks
from rma._job.store_server import StoreServer

# Rank 1 comes 2.5 s late to each of: a barrier, a fence, a lock rank 0 waits for.
LATE = """
import time
import numpy as np
import rma
comm = rma.init()
win = rma.Window.allocate(comm, 1, np.int64)
comm.barrier()
if comm.rank == 1:
    time.sleep(2.5)
{call}
comm.barrier()
print("done", flush=True)
"""

CALLS = {
    "comm.barrier": ("comm.barrier()", "comm.barrier (waiting for rank 1)"),
    "win.fence": ("win.fence()", "win.fence of window"),
    # Rank 1 takes rank 0's lock first and holds it while it sleeps.
    "win.lock": (
        "if comm.rank == 1:\n    win.lock(0); time.sleep(2.5); win.unlock(0)\n"
        "else:\n    time.sleep(0.5); win.lock(0); win.unlock(0)",
        "win.lock to rank 0 of window",
    ),
}


def run(code, size, hang_report, **env):
    store = StoreServer(size=size)
    store.start()
    try:
        env = {"RMA_HANG_REPORT": hang_report, **env}
        return finish(start_ranks(code, size, store, extra_env=env, rank_variable="RMA_RANK"), timeout=60)
    finally:
        store.close()


@pytest.mark.parametrize("call", CALLS)
def test_a_long_wait_says_once_what_it_waits_for_and_goes_on(call):
    code, named = CALLS[call]
    if call == "win.lock":
        code_text = LATE.replace("if comm.rank == 1:\n    time.sleep(2.5)\n", "").format(call=code)
    else:
        code_text = LATE.format(call=code)
    results = run(code_text, 2, "1")
    for rank, (status, out, err) in enumerate(results):
        assert status == 0 and out == "done\n", err
        reports = [line for line in err.splitlines() if "still waiting" in line]
        if rank == 0:
            assert len(reports) == 1, err
            assert reports[0].startswith("rma: rank 0: still waiting in ") and named in reports[0], reports
            assert "on rank 0 of window" not in reports[0], reports  # the rank is said once, up front
            assert re.search(r"waiting for (the exclusive lock on rank 0|rank 1\b|ranks \[1\])", reports[0]), reports
            assert "after 1 s (RMA_HANG_REPORT" in reports[0]
        else:
            assert reports == [], err  # rank 1 never waited long


def test_rma_hang_report_0_turns_the_reports_off():
    results = run(LATE.format(call="comm.barrier()"), 2, "0")
    for status, out, err in results:
        assert status == 0 and out == "done\n" and "still waiting" not in err, err


def test_a_short_wait_says_nothing():
    results = run(LATE.format(call="comm.barrier()"), 2, "10")
    for status, out, err in results:
        assert status == 0 and out == "done\n" and "still waiting" not in err, err


@pytest.mark.skipif(
    os.environ.get("RMA_TRANSPORT") == "libfabric",
    reason="through libfabric the fence is the communicator's barrier, which names the rank of its round",
)
def test_a_fence_on_shared_memory_names_exactly_the_ranks_missing():
    # 3 ranks, rank 1 late: ranks 0 and 2 both wait for rank 1 only.
    results = run(LATE.format(call="win.fence()"), 3, "1")
    for rank, (status, out, err) in enumerate(results):
        assert status == 0 and out == "done\n", err
        reports = [line for line in err.splitlines() if "still waiting" in line]
        if rank == 1:
            assert reports == [], err
        else:
            assert len(reports) == 1 and "(waiting for ranks [1] to fence)" in reports[0], err


@pytest.mark.skipif(
    os.environ.get("RMA_TRANSPORT") == "libfabric",
    reason="through libfabric the fence is the communicator's barrier, which names the rank of its round",
)
def test_rma_timeout_names_the_call_the_rank_once_and_the_ranks_missing():
    # Rank 1 skips the fence that ranks 0 and 2 wait in; RMA_TIMEOUT ends their wait.
    code = """
import time
import numpy as np
import rma
comm = rma.init()
win = rma.Window.allocate(comm, 1, np.int64)
comm.barrier()
if comm.rank == 1:
    time.sleep(1.5)
else:
    try:
        win.fence()
    except rma.RMATimeoutError as error:
        assert isinstance(error, TimeoutError)
        print(error, flush=True)
comm.barrier()
"""
    results = run(code, 3, "0", RMA_TIMEOUT="1")
    for rank in (0, 2):
        status, out, err = results[rank]
        assert status == 0, err
        message = out.strip()
        assert message.startswith(f"rma: rank {rank}: win.fence of window 1 "), message
        assert message.count(f"rank {rank}") == 1, message  # said once, up front
        assert "(waiting for ranks [1] to fence)" in message and "RMA_TIMEOUT" in message, message
    assert results[1][0] == 0, results[1][2]
