"""rma.notebook: ranks that persist across cells (the notebooks themselves run through nbmake)."""

import os
import signal
import threading
import time

import pytest

import rma.notebook


@pytest.fixture(scope="module")
def cluster():
    with rma.notebook.Cluster(3) as cluster:
        yield cluster


def test_cells_run_on_every_rank_and_state_persists(cluster):
    results = cluster.run("x = comm.rank * 10\nprint('rank', comm.rank, 'of', comm.size)")
    assert [r.stdout for r in results] == [f"rank {r} of 3\n" for r in range(3)]
    assert all(r.error is None for r in results)
    assert cluster.pull("x + 1") == [1, 11, 21]  # the namespace outlives the cell
    cluster.push(step=5)
    assert cluster.pull("step * comm.rank") == [0, 5, 10]


def test_windows_live_across_cells_and_come_back_as_arrays(cluster):
    cluster.run("win = rma.Window.allocate(comm, 4, np.int64)")
    cluster.run("with win.fence():\n    win.put(np.full(4, comm.rank, np.int64), (comm.rank + 1) % comm.size)")
    parts = cluster.pull("win.local.copy()")
    assert [list(p) for p in parts] == [[2] * 4, [0] * 4, [1] * 4]
    cluster.run("win.free()")


def test_a_rank_exception_shows_its_traceback(cluster, capsys):
    results = cluster.run("if comm.rank == 1:\n    raise ValueError('only on one')")
    assert results[0].error is None and results[2].error is None
    assert "ValueError: only on one" in results[1].error and '"<cell>", line 2' in results[1].error
    rma.notebook.show(results)
    captured = capsys.readouterr()
    assert "[rank 1]" in captured.out and "ValueError: only on one" in captured.err
    with pytest.raises(rma.notebook.RankError, match="rank 1"):
        cluster.pull("1 / 0 if comm.rank == 1 else 0")


def test_interrupting_the_kernel_interrupts_the_cell_not_the_job(cluster):
    # What the kernel gets on "interrupt": SIGINT in its main thread.
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    began = time.monotonic()
    results = cluster.run("import time\ntime.sleep(30)")
    assert time.monotonic() - began < 10
    assert all("KeyboardInterrupt" in r.error for r in results)
    assert cluster.pull("comm.allgather(comm.rank)") == [[0, 1, 2]] * 3  # the job goes on


def test_interrupting_ranks_blocked_inside_rma(cluster):
    # Ranks 1 and 2 wait in C++ (without the GIL) for a message that never comes.
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    results = cluster.run("if comm.rank != 0:\n    comm.recv(0, tag=77)")
    assert results[0].error is None
    assert all("KeyboardInterrupt" in r.error for r in results[1:])
    cluster.run("if comm.rank == 0:\n    for r in (1, 2): comm.send('late', r, tag=77)")
    assert cluster.pull("comm.recv(0, tag=77) if comm.rank else 'late'") == ["late"] * 3


def test_the_cell_magic(cluster, capsys):
    rma.notebook._current = cluster
    rma.notebook._rma_cell("", "print('hello from', comm.rank)")
    out = capsys.readouterr().out
    assert "[rank 0]\nhello from 0" in out and "[rank 2]\nhello from 2" in out
    with pytest.raises(rma.notebook.RankError):
        rma.notebook._rma_cell("", "assert comm.rank != 0")
    rma.notebook._current = None


def test_stop_ends_every_rank():
    cluster = rma.notebook.Cluster(2)
    pids = [p.pid for p in cluster._processes]
    cluster.stop()
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    with pytest.raises(rma.RMAError, match="stopped"):
        cluster.run("pass")
