"""General active target: post, start, complete, wait, test (spec/000, spec/003)."""

import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import rma

SEVERAL = dict(nprocs=[2, 3, 4], transports=["shared-memory", "libfabric"], providers=["shm", "tcp"])


@pytest.mark.rma(**SEVERAL)
def test_ring_exchange_back_to_back_epochs(comm):
    win = rma.Window.allocate(comm, 8, np.int64)
    right, left = (comm.rank + 1) % comm.size, (comm.rank - 1) % comm.size
    for epoch in range(10):
        with win.post(rma.Group([left])):
            with win.start([right]):
                win.put(np.full(8, 100 * epoch + comm.rank, np.int64), right)
        np.testing.assert_array_equal(win.local, 100 * epoch + left)
    win.free()


@pytest.mark.rma(**SEVERAL)
def test_one_to_many_and_many_to_one(comm):
    win = rma.Window.allocate(comm, comm.size, np.int32)
    others = [r for r in range(comm.size) if r != 0]
    # Rank 0 writes to everyone else.
    if comm.rank == 0:
        with win.start(others):
            for r in others:
                win.put(np.arange(comm.size, dtype=np.int32) + r, r)
    else:
        with win.post([0]):
            pass
        np.testing.assert_array_equal(win.local, np.arange(comm.size) + comm.rank)
    # Everyone else accumulates into rank 0, each into its own slot and all into slot 0.
    if comm.rank == 0:
        win.local[:] = 0
        win.post(others)
        win.wait()
        assert win.local[0] == len(others)
        np.testing.assert_array_equal(win.local[1:], np.arange(1, comm.size) * 10)
    else:
        win.start([0])
        win.accumulate(np.int32(1), 0, 0)
        win.put(np.int32(comm.rank * 10), 0, comm.rank)
        win.complete()
    win.free()


@pytest.mark.rma(**SEVERAL)
def test_no_data_arrives_before_the_post(comm):
    # Weak synchronization (spec/000, figure 29): start may return before the post, but the
    # target's stores before its post are never clobbered by early data.
    win = rma.Window.allocate(comm, 4, np.float64)
    if comm.rank == 0:
        began = time.monotonic()
        win.start(range(1, comm.size))
        start_took = time.monotonic() - began
        for r in range(1, comm.size):
            win.put(np.full(4, 7.0), r)  # waits for r's post
        win.complete()
        assert start_took < 0.5  # start returned without waiting for the posts (sent after 1 s)
    elif comm.rank >= 1:
        time.sleep(1.0)
        win.local[:] = -1.0  # a local store, before the post
        win.post([0])
        win.wait()
        np.testing.assert_array_equal(win.local, 7.0)
    comm.barrier()
    win.free()


@pytest.mark.rma(**SEVERAL)
def test_wait_needs_every_origin_and_complete_does_not_wait_for_wait(comm):
    win = rma.Window.allocate(comm, comm.size, np.int64)
    origins = list(range(1, comm.size))
    if comm.rank == 0:
        win.post(origins)
        began = time.monotonic()
        assert not win.test()  # the origins have not completed yet
        time.sleep(1.5)  # the origins' complete must not wait for this rank's wait
        win.wait()
        np.testing.assert_array_equal(win.local[1:], origins)
        reports = [comm.recv(r, tag=4) for r in origins]
        assert reports[-1] > 0.2  # the last origin completed only after its 0.3 s nap
        assert all(took < 1.2 for took in reports)  # complete returned long before rank 0's wait
    else:
        began = time.monotonic()
        if comm.rank == comm.size - 1:
            time.sleep(0.3)
        with win.start([0]):
            win.put(np.int64(comm.rank), 0, comm.rank)
        comm.send(time.monotonic() - began, 0, tag=4)
    comm.barrier()
    win.free()


@pytest.mark.rma(**SEVERAL)
def test_posts_that_arrive_early_are_counted(comm):
    win = rma.Window.allocate(comm, 1, np.int64)
    if comm.rank == 0:
        time.sleep(0.3)  # every post has arrived long before this start
        for epoch in range(3):
            with win.start(range(1, comm.size)):
                for r in range(1, comm.size):
                    win.accumulate(np.int64(epoch + 1), r)
    else:
        for _ in range(3):
            with win.post([0]):
                pass
        assert win.local[0] == 1 + 2 + 3
    comm.barrier()
    win.free()


@pytest.mark.rma(**SEVERAL)
def test_test_polls_until_the_epoch_ends(comm):
    win = rma.Window.allocate(comm, 1, np.int64)
    if comm.rank == 0:
        win.post(range(1, comm.size))
        polls = 0
        while not win.test():
            polls += 1
            time.sleep(0.01)
        assert polls > 0
        with pytest.raises(rma.EpochError, match="no exposure epoch"):
            win.test()
    else:
        time.sleep(0.1)
        with win.start([0]):
            win.accumulate(np.int64(1), 0)
    comm.barrier()
    if comm.rank == 0:
        assert win.local[0] == comm.size - 1
    win.free()


@pytest.mark.rma(nprocs=[1, 2, 3], transports=["shared-memory", "libfabric"], providers=["shm", "tcp"])
def test_empty_groups_and_self(comm):
    win = rma.Window.allocate(comm, 2, np.int64)
    with win.post([]):
        pass
    with win.start(rma.Group()):
        win.put(np.ones(2, np.int64), rma.PROC_NULL)
    # A rank exposes to itself and accesses itself at once.
    with win.post([comm.rank]):
        with win.start([comm.rank]):
            win.put(np.full(2, 5, np.int64), comm.rank)
    np.testing.assert_array_equal(win.local, 5)
    win.free()


@pytest.mark.rma(**SEVERAL)
def test_figure_32_large_exchange_does_not_deadlock(comm):
    # Each rank posts, then start/put/complete of 64 MiB, then waits (spec/003, figure 32).
    words = 8 * 1024 * 1024  # 64 MiB of float64
    win = rma.Window.allocate(comm, words, np.float64)
    right, left = (comm.rank + 1) % comm.size, (comm.rank - 1) % comm.size
    data = np.full(words, float(comm.rank))
    win.post([left])
    win.start([right])
    win.put(data, right)
    win.complete()
    win.wait()
    assert win.local[0] == left and win.local[-1] == left and np.all(win.local == left)
    win.free()


@pytest.mark.rma(**SEVERAL)
def test_figure_34_target_blocked_in_recv(comm):
    # The target posts and then blocks in recv; the origin's start/put/complete must finish
    # (progress) before it sends (spec/003, figure 34).
    win = rma.Window.allocate(comm, 16, np.int64)
    if comm.rank == 1:
        win.post([0])
        assert comm.recv(0, tag=9) == "done"
        win.wait()
        np.testing.assert_array_equal(win.local, np.arange(16))
    elif comm.rank == 0:
        win.start([1])
        win.put(np.arange(16, dtype=np.int64), 1)
        win.complete()
        comm.send("done", 1, tag=9)
    comm.barrier()
    win.free()


@pytest.mark.rma(**SEVERAL)
def test_epoch_errors(comm):
    win = rma.Window.allocate(comm, 4, np.int64)
    with pytest.raises(rma.EpochError, match="no access epoch is open"):
        win.complete()
    with pytest.raises(rma.EpochError, match="no exposure epoch is open"):
        win.wait()
    with pytest.raises(rma.EpochError, match="no exposure epoch is open"):
        win.test()
    right, left = (comm.rank + 1) % comm.size, (comm.rank - 1) % comm.size
    win.post([left])
    win.start([right])
    with pytest.raises(rma.EpochError, match="already open"):
        win.start([right])
    with pytest.raises(rma.EpochError, match="already open"):
        win.post([left])
    outsider = (comm.rank + 2) % comm.size
    if outsider != right:
        with pytest.raises(rma.EpochError, match=f"rank {outsider} is not in the group"):
            win.put(np.ones(4, np.int64), outsider)
    with pytest.raises(rma.EpochError, match="never overlap"):
        win.fence()
    with pytest.raises(rma.EpochError, match="access epoch"):
        win.free()
    with pytest.raises(ValueError, match="win.post.*ranks must be distinct"):
        win.post([0, 0])
    with pytest.raises(ValueError, match="not a rank of the window"):
        win.start([comm.size])
    win.complete()
    win.wait()
    # A fence epoch with calls keeps start and post out; an idle one does not.
    win.fence()
    win.put(np.ones(4, np.int64), comm.rank)
    with pytest.raises(rma.EpochError, match="fence epoch"):
        win.start([right])
    win.fence()
    with win.post([left]), win.start([right]):
        pass
    win.free()


def run_job(code, size=2, timeout="2"):
    env_code = textwrap.dedent(code)
    return subprocess.run(
        [sys.executable, "-m", "rma", "-n", str(size), "-c", env_code],
        capture_output=True,
        text=True,
        timeout=60,
        env={**__import__("os").environ, "RMA_TIMEOUT": timeout},
    )


@pytest.mark.slow
def test_a_deadlock_the_user_wrote_raises_after_the_deadline():
    # spec/003 figure 33: rank 1 waits for rank 0's complete, rank 0 waits in recv for rank 1.
    out = run_job("""
        import numpy as np, rma
        comm = rma.init()
        win = rma.Window.allocate(comm, 4, np.int64)
        if comm.rank == 0:
            win.start([1]); win.put(np.ones(4, np.int64), 1)
            try:
                comm.recv(1)
            except rma.RMATimeoutError as error:
                print("origin:", error)
        else:
            win.post([0])
            try:
                win.wait()
            except rma.RMATimeoutError as error:
                print("target:", error)
    """)
    # Each names its rank once, up front, then the call and whom it waits for.
    assert "target: rma: rank 1: win.wait of window" in out.stdout
    assert "still waiting for win.complete from ranks [0]" in out.stdout
    assert "origin: rma: rank 0: comm.recv (waiting for rank 1, tag 0) did not finish" in out.stdout


@pytest.mark.slow
def test_post_and_start_swapped_on_both_ranks_raises_after_the_deadline():
    out = run_job("""
        import numpy as np, rma
        comm = rma.init()
        win = rma.Window.allocate(comm, 4, np.int64)
        other = 1 - comm.rank
        win.start([other])
        try:
            win.put(np.ones(4, np.int64), other)
        except rma.RMATimeoutError as error:
            print(error)
    """)
    assert out.stdout.count("waiting for rank") == 2
    assert "to call win.post" in out.stdout and "win.start([" in out.stdout


@pytest.mark.rma(nprocs=[2, 3, 4], transports=["shared-memory"])
def test_a_window_made_after_another_starts_with_no_notices(comm):
    # A same-host window takes the control block of one freed before (ControlPool): the posts and
    # completes counted there for the old window must not count for the new one, or a start
    # would go ahead before the target posted, and read what it had not written yet.
    others = [r for r in range(comm.size) if r != 0]
    for round in range(3):
        win = rma.Window.allocate(comm, 1, np.int64)
        for _ in range(5):  # notices counted in the blocks
            if comm.rank == 0:
                with win.start(others):
                    pass
            else:
                with win.post([0]):
                    pass
        win.free()
        win = rma.Window.allocate(comm, 1, np.int64)
        got = {r: np.zeros(1, np.int64) for r in others}
        if comm.rank == 0:
            with win.start(others):
                for r in others:
                    win.get(got[r], r)
            # (Filled once the epoch completed: through libfabric a get lands at complete().)
            assert {r: int(got[r][0]) for r in others} == {r: 10 * round + r for r in others}, round
        else:
            time.sleep(0.05)
            win.local[0] = 10 * round + comm.rank  # only now posted: rank 0 must see it
            with win.post([0]):
                pass
        win.free()
