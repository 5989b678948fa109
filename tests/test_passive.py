"""Passive target: locks, lock_all, flush, request-based calls, wait_until, rma.sync."""

import os
import subprocess
import sys
import time

import numpy as np
import pytest

import rma

EVERYWHERE = dict(nprocs=[1, 2, 3, 4], transports=["shared-memory", "libfabric"], providers=["shm", "tcp"])
SEVERAL = dict(nprocs=[3, 4], transports=["shared-memory", "libfabric"], providers=["shm", "tcp"])
EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "examples", "bulletin_board.py")


@pytest.mark.slow
@pytest.mark.rma(nprocs=8, transports=["shared-memory", "libfabric"], providers=["shm", "tcp"], timeout=120)
def test_exclusive_lock_counter_contention(comm):
    # A read-modify-write that is not atomic by itself: only the lock makes the total exact.
    win = rma.Window.allocate(comm, 1, np.int64)
    value = np.zeros(1, np.int64)
    for _ in range(200):
        with win.lock(0, rma.LOCK_EXCLUSIVE):
            win.get(value, 0)
            win.flush(0)
            win.put(value + 1, 0)
    comm.barrier()
    if comm.rank == 0:
        assert win.local[0] == 200 * comm.size
    win.free()


@pytest.mark.rma(**EVERYWHERE)
def test_shared_locks_are_held_together(comm):
    win = rma.Window.allocate(comm, 4, np.int64)
    win.local[:] = comm.rank
    comm.barrier()
    # Every rank holds a shared lock on rank 0 at once: the barrier inside proves it.
    with win.lock(0, rma.LOCK_SHARED):
        comm.barrier()
        got = np.zeros(4, np.int64)
        win.get(got, 0)
        win.flush(0)
        np.testing.assert_array_equal(got, 0)
    comm.barrier()
    win.free()


@pytest.mark.rma(**EVERYWHERE)
def test_lock_any_rank_self_included_and_lock_all(comm):
    win = rma.Window.allocate(comm, comm.size, np.int64)
    for target in range(comm.size):
        with win.lock(target):
            win.accumulate(np.int64(1), target, comm.rank)
    comm.barrier()
    np.testing.assert_array_equal(win.local, 1)
    comm.barrier()  # nobody writes the next phase's values before everyone has checked
    with win.lock_all():
        for target in range(comm.size):
            win.put(np.int64(comm.rank + 10), target, comm.rank)
            win.flush(target)
        win.flush_all()
        win.flush_local(comm.rank)
        win.flush_local_all()
        win.sync()
    comm.barrier()
    np.testing.assert_array_equal(win.local, np.arange(comm.size) + 10)
    win.free()


@pytest.mark.rma(**EVERYWHERE)
def test_an_exception_inside_the_block_still_unlocks(comm):
    win = rma.Window.allocate(comm, 1, np.int64)
    with pytest.raises(ValueError):
        with win.lock(comm.rank):
            raise ValueError("inside")
    with win.lock(comm.rank):  # would raise EpochError if the first were still held
        pass
    comm.barrier()
    win.free()


@pytest.mark.rma(**SEVERAL)
def test_flush_means_remote_completion(comm):
    # Rank 0 puts into rank 1 and flushes, then tells rank 2, which reads the value there.
    win = rma.Window.allocate(comm, 4, np.float64)
    if comm.rank == 0:
        with win.lock(1, rma.LOCK_SHARED):
            win.put(np.arange(4.0) + 0.5, 1)
            win.flush(1)
            comm.send("flushed", 2)
            comm.recv(2)
    elif comm.rank == 2:
        assert comm.recv(0) == "flushed"
        got = np.zeros(4)
        with win.lock(1, rma.LOCK_SHARED):
            win.get(got, 1)
        np.testing.assert_array_equal(got, np.arange(4.0) + 0.5)
        comm.send("read", 0)
    comm.barrier()
    win.free()


@pytest.mark.rma(**SEVERAL)
def test_a_writer_is_not_starved_by_a_stream_of_readers(comm):
    win = rma.Window.allocate(comm, 1, np.int64)
    readers = range(2, comm.size)
    comm.barrier()
    if comm.rank in readers:
        stop = time.monotonic() + 2.0
        while time.monotonic() < stop:  # overlapping shared locks, back to back
            with win.lock(0, rma.LOCK_SHARED):
                time.sleep(0.02)
    elif comm.rank == 1:
        time.sleep(0.3)  # the readers' stream is flowing
        began = time.monotonic()
        with win.lock(0, rma.LOCK_EXCLUSIVE):
            waited = time.monotonic() - began
            win.put(np.int64(7), 0)
        assert waited < 1.0, f"the writer waited {waited:.2f} s while readers streamed for 2 s"
    comm.barrier()
    if comm.rank == 0:
        assert win.local[0] == 7
    win.free()


@pytest.mark.rma(nprocs=2, transports=["shared-memory", "libfabric"], providers=["shm", "tcp"])
@pytest.mark.parametrize("busy", ["compute", "sleep", "recv"])
def test_passive_progress_with_a_busy_target(comm, busy):
    win = rma.Window.allocate(comm, 1000, np.float64)
    comm.barrier()
    if comm.rank == 1:
        stop = time.monotonic() + 1.5
        if busy == "compute":
            total = 0
            while time.monotonic() < stop:  # pure Python: holds the GIL
                total += sum(range(1000))
        elif busy == "sleep":
            time.sleep(1.5)
        else:
            assert comm.recv(0, tag=5) == "done"
    else:
        time.sleep(0.2)
        got = np.zeros(1000)
        times = []
        for _ in range(5):
            began = time.monotonic()
            with win.lock(1):
                win.put(np.arange(1000.0), 1)
                win.flush(1)  # the put completes before the get reads the same bytes
                win.get(got, 1)
            times.append(time.monotonic() - began)
        np.testing.assert_array_equal(got, np.arange(1000.0))
        assert sorted(times)[len(times) // 2] < 0.05, f"lock/put/get/unlock took {times}"
        if busy == "recv":
            comm.send("done", 1, tag=5)
    comm.barrier()
    win.free()


@pytest.mark.rma(**EVERYWHERE)
def test_request_based_calls(comm):
    win = rma.Window.allocate(comm, 8, np.int64)
    target = (comm.rank + 1) % comm.size
    with pytest.raises(rma.EpochError, match="passive-target epoch"):
        win.rput(np.ones(8, np.int64), target)
    win.fence()
    with pytest.raises(rma.EpochError, match="passive-target epoch"):
        win.rget(np.ones(8, np.int64), target)
    win.fence(rma.Mode.NOSUCCEED)
    comm.barrier()
    with win.lock(target):
        put = win.rput(np.arange(8, dtype=np.int64), target)
        put.wait()
        assert put.test()
        win.flush(target)  # wait() completes the rput at this rank only; the accumulate must come after it
        acc = win.raccumulate(np.ones(8, np.int64), target)
        assert acc.wait() is None
        result = np.zeros(8, np.int64)
        fetched = win.rget_accumulate(np.ones(8, np.int64), result, target)
        assert fetched.wait() is result
        np.testing.assert_array_equal(result, np.arange(8) + 1)
        win.flush(target)
        strided = np.zeros(16, np.int64)[::2]
        got = win.rget(strided, target).wait()
        np.testing.assert_array_equal(got, np.arange(8) + 2)
        win.flush(target)
        pending = win.rput(np.zeros(8, np.int64), target)
    assert pending.test()  # unlock completed it
    comm.barrier()
    np.testing.assert_array_equal(win.local, 0)
    win.free()


@pytest.mark.rma(**EVERYWHERE)
def test_wait_until_sees_remote_updates(comm):
    win = rma.Window.allocate(comm, 2, np.int64)
    comm.barrier()
    left = (comm.rank - 1) % comm.size
    right = (comm.rank + 1) % comm.size
    with win.lock(right):
        win.accumulate(np.int64(comm.rank + 1), right, 1)
    assert win.wait_until(1, "==", left + 1, timeout=10) == left + 1
    with pytest.raises(rma.RMATimeoutError, match="wait_until"):  # (also a TimeoutError)
        win.wait_until(0, ">", 0, timeout=0.1)
    with pytest.raises(TimeoutError):
        win.wait_until(0, ">", 0, timeout=0)
    with pytest.raises(ValueError, match="cmp must be one of"):
        win.wait_until(0, "=>", 0)
    for bad in (float("nan"), -1):
        with pytest.raises(ValueError, match="timeout"):
            win.wait_until(0, ">", 0, timeout=bad)
    assert win.wait_until(0, ">=", 0, timeout=0) == 0
    np.testing.assert_array_equal(win.wait_until(slice(0, 1), "==", 0), [0])
    comm.barrier()
    win.free()


@pytest.mark.rma(**EVERYWHERE)
def test_counter_hands_out_a_permutation(comm):
    counter = rma.sync.Counter(comm, start=100, root=comm.size - 1)
    mine = [counter.next() for _ in range(25)]
    everyone = sorted(t for ts in comm.allgather(mine) for t in ts)
    assert everyone == list(range(100, 100 + 25 * comm.size))
    assert counter.next(incr=0) == 100 + 25 * comm.size
    comm.barrier()
    counter.free()


@pytest.mark.rma(**EVERYWHERE)
def test_mutex_excludes_and_try_has_one_winner(comm):
    mutex = rma.sync.Mutex(comm)
    shared = rma.Window.allocate(comm, 1, np.int64)
    value = np.zeros(1, np.int64)
    for _ in range(30):
        with mutex:  # the mutex alone protects this read-modify-write
            with shared.lock(0, rma.LOCK_SHARED):
                shared.get(value, 0)
            with shared.lock(0, rma.LOCK_SHARED):
                shared.put(value + 1, 0)
    comm.barrier()
    if comm.rank == 0:
        assert shared.local[0] == 30 * comm.size
    comm.barrier()
    winners = comm.allgather(mutex.acquire(blocking=False))
    assert sum(winners) == 1
    if mutex.locked():
        with pytest.raises(RuntimeError, match="already holds"):
            mutex.acquire()
        mutex.release()
    with pytest.raises(RuntimeError, match="does not hold"):
        mutex.release()
    comm.barrier()
    shared.free()
    mutex.free()


@pytest.mark.rma(**EVERYWHERE)
def test_passive_target_errors(comm):
    win = rma.Window.allocate(comm, 2, np.int64)
    with pytest.raises(rma.EpochError, match="holds no lock"):
        win.unlock(0)
    with pytest.raises(rma.EpochError, match="flush needs a passive-target epoch"):
        win.flush(0)
    with pytest.raises(rma.EpochError, match="passive-target epoch"):
        win.flush_all()
    with win.lock(0, rma.LOCK_SHARED):
        with pytest.raises(rma.EpochError, match="second lock on one target"):
            win.lock(0, rma.LOCK_SHARED)
        with pytest.raises(rma.EpochError, match="already open"):
            win.lock_all()
    with pytest.raises(TypeError, match="lock_type"):
        win.lock(0, 3)
    with win.lock_all():
        with pytest.raises(rma.EpochError, match="unlock_all"):
            win.unlock(0)
        with pytest.raises(rma.EpochError, match="passive-target epoch"):
            win.fence()
        with pytest.raises(rma.EpochError, match="passive-target epoch"):
            win.start([0])
        with pytest.raises(rma.EpochError, match="passive-target epoch"):
            win.post([0])
    win.fence()
    win.put(np.ones(2, np.int64), comm.rank)
    with pytest.raises(rma.EpochError, match="fence epoch"):
        win.lock(0)
    win.fence()  # an idle fence epoch gives way to a lock
    with win.lock(0):
        pass
    right, left = (comm.rank + 1) % comm.size, (comm.rank - 1) % comm.size
    win.post([left])
    with pytest.raises(rma.EpochError, match="post/start epoch"):
        win.lock(0)
    win.start([right])
    win.complete()
    win.wait()
    comm.barrier()
    win.free()
    nolocks = rma.Window.allocate(comm, 1, np.int64, info={"no_locks": True})
    with pytest.raises(rma.EpochError, match="no_locks"):
        nolocks.lock(0)
    with pytest.raises(rma.EpochError, match="no_locks"):
        nolocks.lock_all()
    nolocks.free()


@pytest.mark.parametrize("provider", ["shm", "tcp"])
@pytest.mark.parametrize("ranks", [4, 8])
def test_bulletin_board_example(ranks, provider):
    out = subprocess.run(
        [sys.executable, "-m", "rma", "-n", str(ranks), "--provider", provider, EXAMPLE, "--rounds", "80"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert f"bulletin board: {ranks} ranks" in out.stdout
    assert "torn records: 0; lost posts: 0" in out.stdout and "bulletin board: OK" in out.stdout


@pytest.mark.slow
def test_a_lock_request_given_up_at_the_deadline_is_handed_back():
    # A mutex's lock waits for its grant on every transport (a window's lock on a rank of
    # another host rides the epoch's first call instead, and waits in the call or the unlock).
    code = """
import time, numpy as np, rma
comm = rma.init()
mutex = rma.sync.Mutex(comm)
if comm.rank == 0:
    mutex.acquire()
    time.sleep(2.0)          # rank 1's request waits, then gives up after 1 s
    mutex.release()
    time.sleep(0.5)          # rank 1's late grant comes back at once
    began = time.monotonic()
    with mutex:
        print("relocked", time.monotonic() - began < 0.5)
else:
    time.sleep(0.2)
    try:
        mutex.acquire()
    except rma.RMATimeoutError:
        print("gave up")
    time.sleep(3.0)
"""
    out = subprocess.run(
        [sys.executable, "-m", "rma", "-n", "2", "--tag-output", "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "RMA_TIMEOUT": "1"},
    )
    assert "[1] gave up" in out.stdout, out.stdout + out.stderr
    assert "[0] relocked True" in out.stdout, out.stdout + out.stderr
