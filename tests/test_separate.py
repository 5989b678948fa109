"""Issue 18, item 5: RMA_MODEL=separate emulates MPI's separate memory model (spec/004):
win.local is a private copy, remote calls reach the public copy, and the two meet at win.sync(),
fences, post/wait, and locks of the rank's own window. Ranks are started by hand with the
variable set, on 1, 2 and 4 ranks, on whichever transport RMA_TRANSPORT selects and once
through libfabric."""

import pytest

from handmade_ranks import run_job

SIZES = [1, 2, 4]

HEAD = """
import numpy as np
import rma
comm = rma.init()
rank, size = comm.rank, comm.size
got = np.zeros(1, np.int64)
"""

# Every rank puts rank+1 into element `rank` of rank 0 in a lock_all epoch; rank 0 reads
# win.local before and after win.sync().
PUT_THEN_SYNC = """
win = rma.Window.allocate(comm, size, np.int64)
print("KIND", type(win).__name__, win.model)
win.lock_all()
comm.barrier()  # every rank holds the epoch: rank 0's lock_all has made the copies meet
win.put(rank + 1, 0, rank)
win.flush(0)
comm.barrier()
if rank == 0:
    print("BEFORE", win.local.tolist())
    win.sync()
    print("AFTER", win.local.tolist())
win.unlock_all()
win.free()
"""

# Rank 0 stores 9 into win.local[0]; every rank gets it before and after rank 0's win.sync().
STORE_THEN_SYNC = """
win = rma.Window.allocate(comm, 2, np.int64)
with win.lock_all():
    comm.barrier()
    if rank == 0:
        win.local[0] = 9
    comm.barrier()
    win.get(got, 0, 0)
    win.flush(0)
    print("BEFORE", int(got[0]))
    comm.barrier()
    if rank == 0:
        win.sync()
    comm.barrier()
    win.get(got, 0, 0)
    win.flush(0)
    print("AFTER", int(got[0]))
win.free()
"""

# A fence makes the copies meet both ways: the store before it reaches the gets after it, and
# the puts of its epoch reach win.local.
FENCE = """
win = rma.Window.allocate(comm, size + 1, np.int64)
win.local[size] = 100 + rank
with win.fence():
    win.put(rank + 1, (rank + 1) % size, rank)
print("LOCAL", win.local[:size].tolist())
with win.fence():
    win.get(got, (rank + 1) % size, size)
print("GOT", int(got[0]))
win.free()
"""

# post/start/complete/wait: wait brings the puts of the epoch into win.local.
PSCW = """
win = rma.Window.allocate(comm, size, np.int64)
target = 0
if rank == target:
    win.post(range(size))
with win.start([target]):
    win.put(rank + 1, target, rank)
if rank == target:
    print("BEFORE", win.local.tolist())
    win.wait()
    print("AFTER", win.local.tolist())
win.free()
"""

# Window.create: the array passed in is the public copy, win.local the private one.
CREATE = """
array = np.zeros(size, np.int64)
win = rma.Window.create(comm, array)
with win.fence():
    win.put(rank + 1, 0, rank)
if rank == 0:
    print("ARRAY", array.tolist(), "LOCAL", win.local.tolist(), "SAME", win.local is array)
win.free()
"""


def run(code, size, model="separate", **env):
    # (RMA_CHECK off unless a test sets it: the tests name the window classes they expect)
    environment = {"RMA_CHECK": "0", "RMA_MODEL": model, "RMA_TIMEOUT": "20", "RMA_HANG_REPORT": "0", **env}
    results = run_job(HEAD + code, size, environment)
    for rank, (status, _, err) in enumerate(results):
        assert status == 0, f"rank {rank}: {err}"
    return [out for _, out, _ in results]


# The same through rma.compat's facade, whose Put and Fence are compiled calls: every rank puts
# rank+1 into element `rank` of rank 0; rank 0 reads its window memory (the private copy under
# the separate model) after the fence, which makes the copies meet.
FACADE_FENCE = """
from rma.compat import MPI
win = MPI.Win.Allocate(8 * size, 8, comm=MPI.COMM_WORLD)
memory = np.frombuffer(win.tomemory(), np.int64)
win.Fence()
win.Put(np.full(1, rank + 1, np.int64), 0, rank)
win.Fence()
if rank == 0:
    print("AFTER", memory.tolist())
win.Free()
"""


def lines(out, word):
    return [line.split(" ", 1)[1] for line in out.splitlines() if line.startswith(word + " ")]


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("model", ["separate", "unified"])
def test_a_put_reaches_win_local_at_win_sync(model, size):
    out = run(PUT_THEN_SYNC, size, model)
    expected = str(list(range(1, size + 1)))
    assert lines(out[0], "KIND") == (["SeparateWindow separate"] if model == "separate" else ["Window unified"])
    assert lines(out[0], "BEFORE") == [str([0] * size) if model == "separate" else expected]
    assert lines(out[0], "AFTER") == [expected]


@pytest.mark.parametrize("size", SIZES)
def test_the_mpi4py_facade_keeps_the_separate_model(size):
    # Its compiled calls take the separate window's methods: the fence brings the puts into
    # the private copy (a compiled fence straight to the core would leave it stale).
    out = run(FACADE_FENCE, size)
    assert lines(out[0], "AFTER") == [str(list(range(1, size + 1)))], out[0]


@pytest.mark.parametrize("size", SIZES)
def test_a_store_reaches_the_public_copy_at_win_sync(size):
    for rank, text in enumerate(run(STORE_THEN_SYNC, size)):
        assert lines(text, "BEFORE") == ["0"], (rank, text)
        assert lines(text, "AFTER") == ["9"], (rank, text)


@pytest.mark.parametrize("size", SIZES)
def test_a_fence_makes_the_copies_meet(size):
    for rank, text in enumerate(run(FENCE, size)):
        left = (rank - 1) % size
        expected = [0] * size
        expected[left] = left + 1
        assert lines(text, "LOCAL") == [str(expected)], text
        assert lines(text, "GOT") == [str(100 + (rank + 1) % size)], text


@pytest.mark.parametrize("size", SIZES)
def test_wait_brings_the_epochs_puts_into_win_local(size):
    out = run(PSCW, size)
    assert lines(out[0], "AFTER") == [str(list(range(1, size + 1)))]
    # Before wait, win.local shows none of the epoch's puts (rank 0's own put included, as
    # complete has run): only wait lets them in.
    assert lines(out[0], "BEFORE") == [str([0] * size)]


def test_window_create_keeps_the_callers_array_public():
    out = run(CREATE, 2)
    assert lines(out[0], "ARRAY") == ["[1, 2] LOCAL [1, 2] SAME False"]


def test_the_separate_model_through_libfabric_and_with_the_checker():
    out = run(PUT_THEN_SYNC, 3, RMA_TRANSPORT="libfabric", RMA_CHECK="1")
    assert lines(out[0], "KIND") == ["CheckedSeparateWindow separate"]
    assert lines(out[0], "BEFORE") == ["[0, 0, 0]"] and lines(out[0], "AFTER") == ["[1, 2, 3]"]


def test_a_bad_rma_model_is_refused():
    import os
    import subprocess
    import sys

    env = {**os.environ, "RMA_MODEL": "weak"}
    done = subprocess.run(
        [sys.executable, "-c", "import numpy as np, rma; rma.Window.allocate(rma.init(), 1)"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0 and done.stderr == "rma: RMA_MODEL='weak': use unified or separate\n"


def test_the_notebooks_separate_model_section_shows_the_difference():
    """The bulletin-board notebook's last section runs its cell on a cluster started with
    env={"RMA_MODEL": "separate"} and on a plain one: rank 0 must see 0, then 42, on the first,
    and 42 at once on the second (nbmake runs the notebook, but checks no output)."""
    import json
    from pathlib import Path

    from rma.notebook import Cluster

    notebook = json.loads((Path(__file__).parents[1] / "notebooks" / "bulletin_board.ipynb").read_text())
    cells = ["".join(cell["source"]) for cell in notebook["cells"] if cell["cell_type"] == "code"]
    cell = next(text for text in cells if "before win.sync()" in text).removeprefix("%%rma\n")
    seen = {}
    for model, env in (("separate", {"RMA_MODEL": "separate"}), ("unified", None)):
        with Cluster(2, env=env) as cluster:
            results = cluster.run(cell)
        assert all(result.error is None for result in results), [result.error for result in results]
        seen[model] = [line.split(": ")[-1].strip() for line in results[0].stdout.splitlines()]
    assert seen == {"separate": ["0", "42"], "unified": ["42", "42"]}
