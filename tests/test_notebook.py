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
    # The traceback names the cell and shows its source line.
    assert (
        '"<cell ' in results[1].error and "line 2, in <module>\n    raise ValueError('only on one')" in results[1].error
    )
    assert "ValueError: only on one" in results[1].error
    rma.notebook.show(results)
    captured = capsys.readouterr()
    assert "[rank 1] ValueError: only on one" in captured.err
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
    rma.notebook._rma_cell("", "print('hello from', comm.rank)\ncomm.rank * 10")
    out = capsys.readouterr().out
    assert "[rank 0] hello from 0\n" in out and "[rank 2] hello from 2\n" in out
    # The value of the last expression, by rank, after the output.
    assert out.endswith("[rank 0] Out: 0\n[rank 1] Out: 10\n[rank 2] Out: 20\n")
    with pytest.raises(rma.notebook.RankError):
        rma.notebook._rma_cell("", "assert comm.rank != 0")
    rma.notebook._current = None


def test_output_streams_while_the_cell_runs(cluster, tmp_path):
    # Rank 0 prints a line, then waits for the notebook to have seen it: the cell can only
    # end if that line arrived while the cell ran.
    seen = tmp_path / "seen"
    events = []

    def on_output(rank, stream, text):
        events.append((rank, stream, text))
        if (rank, text) == (0, "first\n"):
            seen.write_text("yes")

    code = f"""
import os, sys, time
if comm.rank == 0:
    print("first")
    deadline = time.monotonic() + 20
    while not os.path.exists({str(seen)!r}):
        assert time.monotonic() < deadline, "the notebook never saw the first line"
        time.sleep(0.01)
    print("second", end="")
    print("to stderr", file=sys.stderr)
"""
    results = cluster.run(code, on_output=on_output)
    assert [r.error for r in results] == [None] * 3
    # Whole lines as they come; an unfinished line when the cell ends.
    assert events == [(0, "stdout", "first\n"), (0, "stderr", "to stderr\n"), (0, "stdout", "second")]
    assert results[0].stdout == "first\nsecond" and results[0].stderr == "to stderr\n"


def test_a_rank_that_raises_ends_the_cell_at_once(cluster, capsys):
    errors = []
    began = time.monotonic()
    results = cluster.run(
        "comm2 = comm.dup()\nif comm.rank == 1:\n    raise ValueError('rank one quits')\ncomm2.barrier()",
        on_error=lambda result: errors.append((result.rank, time.monotonic() - began)),
    )
    took = time.monotonic() - began
    # Shown as soon as it was raised, and the others, blocked in the barrier, were stopped.
    assert [rank for rank, _ in errors] == [1] and errors[0][1] < 5
    assert took < rma.notebook.RAISE_GRACE + 5, took
    assert not results[1].interrupted and "ValueError: rank one quits" in results[1].error
    assert [results[r].interrupted for r in (0, 2)] == [True, True]
    assert all("KeyboardInterrupt" in results[r].error for r in (0, 2))
    rma.notebook.show(results)
    err = capsys.readouterr().err
    assert "[rank 1] ValueError: rank one quits" in err
    assert "[rank 0] interrupted at <cell " in err and "line 4: comm2.barrier(), since rank(s) 1 raised" in err
    assert cluster.pull("comm.rank") == [0, 1, 2]  # the job goes on


def test_values_and_figures_of_each_rank(cluster):
    results = cluster.run("x = comm.rank + 1\nx * 100")
    assert [r.display for r in results] == ["100", "200", "300"]
    assert [r.display for r in cluster.run("x = 5")] == [None] * 3  # an assignment shows nothing
    assert cluster.pull("_") == [100, 200, 300]  # as in IPython, _ is the last value

    code = "import matplotlib.pyplot as plt\nplt.plot([0, comm.rank])\nplt.gcf()"
    results = cluster.run(code)
    for r in results:
        assert r.error is None and len(r.figures) == 1 and r.figures[0].startswith(b"\x89PNG")
        assert r.display is None  # the figure is shown, not "Figure(640x480)"
    assert len({r.figures[0] for r in results}) == 3  # each rank's own drawing
    assert all(r.figures == [] for r in cluster.run("1"))  # shown once, then closed


def test_a_dead_rank_is_named_by_every_later_call():
    cluster = rma.notebook.Cluster(2)
    try:
        os.kill(cluster._processes[1].pid, signal.SIGKILL)
        cluster._processes[1].wait()
        for call in (lambda: cluster.run("1"), lambda: cluster.pull("1"), lambda: cluster.push(a=1)):
            with pytest.raises(rma.RMAError, match=r"rank 1 ended \(killed by SIGKILL\).*start a new one"):
                call()
    finally:
        cluster.stop()


def test_a_rank_dying_in_a_cell_is_named():
    cluster = rma.notebook.Cluster(2)
    try:
        with pytest.raises(rma.RMAError, match=r"rank 1 ended \(exit status 3\)"):
            cluster.run("import os\nif comm.rank == 1:\n    os._exit(3)\ncomm.barrier()")
        with pytest.raises(rma.RMAError, match=r"rank 1 ended \(exit status 3\)"):
            cluster.pull("comm.rank")
    finally:
        cluster.stop()


def test_stop_ends_every_rank():
    cluster = rma.notebook.Cluster(2)
    pids = [p.pid for p in cluster._processes]
    cluster.stop()
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    with pytest.raises(rma.RMAError, match="stopped"):
        cluster.run("pass")


def test_a_kernel_shows_each_ranks_output_value_and_figure(tmp_path):
    # What a notebook user gets: a real Jupyter kernel runs the cells (nbclient), and the cell's
    # outputs carry each rank's lines under its label, its last value, and its figure as a PNG.
    nbclient = pytest.importorskip("nbclient")
    nbformat = pytest.importorskip("nbformat")
    pytest.importorskip("matplotlib")
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_code_cell("import rma.notebook\ncluster = rma.notebook.start(2)"),
        nbformat.v4.new_code_cell(
            "%%rma\nimport matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
            "print('hello from', comm.rank)\nplt.plot([0, comm.rank + 1])\ncomm.rank * 10"
        ),
        nbformat.v4.new_code_cell("cluster.stop()"),
    ]
    nbclient.NotebookClient(
        notebook, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    outputs = notebook.cells[1].outputs
    text = "".join(output.get("text", "") for output in outputs if output.output_type == "stream")
    assert "[rank 0] hello from 0\n" in text and "[rank 1] hello from 1\n" in text, outputs
    assert "[rank 0] Out: 0\n" in text and "[rank 1] Out: 10\n" in text, outputs
    images = [output for output in outputs if "image/png" in output.get("data", {})]
    assert len(images) == 2, outputs  # one figure per rank
