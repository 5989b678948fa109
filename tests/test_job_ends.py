"""How a job ends: a rank that leaves because it lost the job says why in one line, and leaves
nothing in /dev/shm. On one host, and on a test bed's (tests/testbed.py). Every run has a
timeout.
"""

import os
import re
import signal
import subprocess
import sys
import time

import pytest

from rma._job.spawn import rank_environment
from rma._job.store_server import StoreServer
from testbed import Job, TestBed, TestBedError

WAIT = 60.0
# Seconds a host's supervisors may take to clean once the job has ended.
CLEANUP = 5.0


def shm_of(pids) -> list[str]:
    """The names in this machine's /dev/shm that carry one of pids as rma's and libfabric's do."""
    wanted = {str(pid) for pid in pids}
    found = []
    for name in os.listdir("/dev/shm"):
        match = re.match(r"(?:rma-)?(\d+)(?:-|:)", name)
        if match and match.group(1) in wanted:
            found.append(name)
    return found


def left_on(host, within: float = CLEANUP) -> list[str]:
    """What stays in host's /dev/shm after giving its cleanup `within` seconds."""
    end = time.monotonic() + within
    while (left := host.shm_files()) and time.monotonic() < end:
        time.sleep(0.1)
    return left


# ---- one host ----


# Rank 0 waits in a receive that never comes, rank 1 sleeps outside any call: both leave when
# the store goes, whatever they were doing.
STRANDED = """
import os, time, numpy as np, rma
comm = rma.init()
win = rma.Window.allocate(comm, 1024, np.int64)
comm.barrier()
print(os.getpid(), flush=True)
comm.recv(1, tag=5) if comm.rank == 0 else time.sleep(120)
"""


def test_a_rank_that_loses_the_store_says_why_in_one_line_and_leaves_nothing():
    # Ranks of rmarun whose store is gone (rmarun killed) stop themselves: one line each on
    # stderr, and their files in /dev/shm go with them.
    store = StoreServer(2)
    store.start()
    procs = []
    try:
        for rank in range(2):
            env = rank_environment(rank, 2, store.reachable_address, store.secret)
            env["RMA_LAUNCHER"] = "rmarun"
            command = [sys.executable, "-c", STRANDED]
            procs.append(subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        pids = [int(proc.stdout.readline()) for proc in procs]
        assert shm_of(pids), "the ranks made no files in /dev/shm: nothing to check"
        store.close()
        ends = [proc.communicate(timeout=20) for proc in procs]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        store.close()
    for rank, (proc, (_, err)) in enumerate(zip(procs, ends)):
        assert proc.returncode == -signal.SIGTERM, err
        line = (
            rf"rma: rank {rank}: lost the job's store at {re.escape(store.reachable_address)} "
            r"\(its connection closed: the launcher is gone\); leaving\n"
        )
        assert re.fullmatch(line, err), err
    assert shm_of(pids) == []


# ---- across the hosts of a test bed ----


@pytest.fixture
def own_bed():
    """A test bed for a test that kills or cuts off one of its hosts."""
    why = TestBed.refusal()
    if why:
        pytest.skip(why)
    try:
        with TestBed(2) as made:
            yield made
    except TestBedError as exc:
        pytest.skip(str(exc))


# Ranks 0 and 1 (host 0) wait in a fence that ranks 2 and 3 (host 1) never reach: those wait in
# a receive that never comes.
BLOCKED = """
import numpy as np, rma
comm = rma.init()
win = rma.Window.allocate(comm, 1024, np.int64)
win.fence()
comm.barrier()
print("ready", flush=True)
win.fence() if comm.rank < 2 else comm.recv(0, tag=99)
"""


def test_ranks_cut_off_say_why_in_one_line_and_leave_nothing(own_bed):
    # Ranks of rmarun (started here by hand, as the remote shell would) whose host is cut off:
    # each says in one line that it lost the store, and since when (RMA_LINK_TIMEOUT).
    env = {"RMA_LAUNCHER": "rmarun", "RMA_LINK_TIMEOUT": "3"}
    job = Job(own_bed, 4, [sys.executable, "-c", BLOCKED], env=env)
    try:
        for rank in range(4):
            assert job.procs[rank].stdout.readline() == "ready\n"
        time.sleep(0.5)
        own_bed.hosts[1].cut_link()
        # Host 0's ranks end on PeerError (their traceback), host 1's on their own.
        ranks = job.outcome(timeout=WAIT)
    finally:
        job.close()
    address = re.escape(job.store.reachable_address)
    for rank in (2, 3):
        status, _, err = ranks[rank]
        assert status == -signal.SIGTERM, err
        line = (
            rf"rma: rank {rank}: lost the job's store at {address} \(no answer for 3 s: RMA_LINK_TIMEOUT; "
            r"this host's link is down, or the store's host is gone\); leaving\n"
        )
        assert re.fullmatch(line, err), err
    assert left_on(own_bed.hosts[1]) == []
