"""Issue 19: mpi4py's names over rma (rma.compat.MPI) on real ranks, 1 to 4: windows of every
flavor with mpi4py's buffer and target specifications (derived target datatypes too), the
epochs, the request-based calls, groups, the object calls, errors as MPI.Exception carrying
rma's text, and `rmarun --mpi4py` running an unmodified mpi4py program."""

import array
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

EVERYWHERE = dict(nprocs=[1, 2, 3, 4], transports=["shared-memory", "libfabric"], providers=["shm", "tcp"])


@pytest.mark.rma(**EVERYWHERE)
def test_put_get_under_fence_with_every_buffer_form(comm):
    from rma.compat import MPI

    world = MPI.COMM_WORLD
    rank, size = world.Get_rank(), world.Get_size()
    memory = MPI.Alloc_mem(4 * 8 * size)
    memory[:] = 0
    win = MPI.Win.Create(memory, 4, MPI.INFO_NULL, world)  # disp_unit 4: displacements count ints
    right = (rank + 1) % size
    win.Fence()
    win.Put(np.array([rank, rank], "i"), right, 2 * rank)  # a bare array: its dtype
    win.Put([array.array("i", [100 + rank]), MPI.INT], right, (4 * size + rank, 1, MPI.INT))
    win.Fence()
    ints = np.frombuffer(memory, "i")
    left = (rank - 1) % size
    assert list(ints[2 * left : 2 * left + 2]) == [left, left]
    assert ints[4 * size + left] == 100 + left
    got = np.full(3, -1, "i")
    win.Get([got, 2, MPI.INT], right, 2 * rank)  # count 2 of the 3
    win.Fence()
    assert list(got) == [rank, rank, -1]
    win.Free()
    assert win == MPI.WIN_NULL
    MPI.Free_mem(memory)


@pytest.mark.rma(**EVERYWHERE)
def test_derived_target_datatypes_select_the_target_elements(comm):
    from rma.compat import MPI

    world = MPI.COMM_WORLD
    rank, size = world.Get_rank(), world.Get_size()
    win = MPI.Win.Allocate(8 * 12, 8, comm=world)
    local = np.frombuffer(win.tomemory(), "d")
    local[:] = 0
    every_third = MPI.DOUBLE.Create_vector(4, 1, 3).Commit()
    blocks = MPI.DOUBLE.Create_indexed([2, 1], [1, 7]).Commit()
    right = (rank + 1) % size
    win.Fence()
    win.Put([np.arange(1.0, 5.0), MPI.DOUBLE], right, (0, 1, every_third))  # elements 0, 3, 6, 9
    win.Fence()
    assert list(local[[0, 3, 6, 9]]) == [1.0, 2.0, 3.0, 4.0]
    assert local[[1, 2, 4, 5, 7, 8, 10, 11]].sum() == 0
    win.Fence()
    win.Accumulate([np.full(3, 10.0), MPI.DOUBLE], right, (0, 1, blocks), op=MPI.SUM)  # 1, 2, 7
    win.Fence()
    assert list(local[[1, 2, 7]]) == [10.0, 10.0, 10.0]
    result = np.zeros(4)
    win.Fence()
    win.Get(result, right, (0, 1, every_third))
    win.Fence()
    assert list(result) == [1.0, 2.0, 3.0, 4.0]
    every_third.Free()
    blocks.Free()
    win.Free()


@pytest.mark.rma(**EVERYWHERE)
def test_atomics_and_request_calls_under_locks(comm):
    from rma.compat import MPI

    world = MPI.COMM_WORLD
    rank, size = world.Get_rank(), world.Get_size()
    win = MPI.Win.Allocate(8 if rank == 0 else 0, 8, comm=world)
    if rank == 0:
        np.frombuffer(win.tomemory(), "q")[:] = 0
    world.Barrier()
    old = np.zeros(1, "q")
    win.Lock(0, MPI.LOCK_SHARED)
    win.Fetch_and_op([np.array([1], "q"), MPI.INT64_T], [old, MPI.INT64_T], 0, 0, MPI.SUM)
    win.Unlock(0)
    tickets = world.allgather(int(old[0]))
    assert sorted(tickets) == list(range(size))  # each rank drew a different ticket
    world.Barrier()
    swapped = np.zeros(1, "q")
    win.Lock(0)  # exclusive by default, as in mpi4py
    win.Compare_and_swap(np.array([-5], "q"), np.array([size], "q"), swapped, 0, 0)
    win.Unlock(0)
    assert world.allreduce(int(swapped[0] == size), op=MPI.SUM) >= 1
    world.Barrier()
    seen = np.zeros(1, "q")
    win.Lock_all()
    request = win.Rget(seen, 0)
    assert request.Wait() is True
    win.Unlock_all()
    assert seen[0] == -5
    win.Free()


@pytest.mark.rma(nprocs=[1, 2, 3, 4])
def test_pscw_with_groups_and_window_attributes(comm):
    from rma.compat import MPI

    world = MPI.COMM_WORLD
    rank, size = world.Get_rank(), world.Get_size()
    win = MPI.Win.Allocate(4 * size, 4, comm=world)
    ints = np.frombuffer(win.tomemory(), "i")
    ints[:] = -1
    everyone = win.Get_group()
    assert MPI.Group.Compare(everyone, world.Get_group()) == MPI.IDENT
    assert everyone.Get_rank() == rank and everyone.Get_size() == size
    world.Barrier()
    win.Post(everyone)
    win.Start(everyone)
    for target in range(size):
        win.Put(np.array([rank], "i"), target, rank)
    win.Complete()
    win.Wait()
    assert list(ints) == list(range(size))
    base, nbytes, unit = win.attrs
    assert (nbytes, unit) == (4 * size, 4) and base == MPI.Get_address(win.tomemory())
    assert win.Get_attr(MPI.WIN_CREATE_FLAVOR) == MPI.WIN_FLAVOR_ALLOCATE
    assert win.Get_attr(MPI.WIN_MODEL) in (MPI.WIN_UNIFIED, MPI.WIN_SEPARATE)
    odd = everyone.Incl([r for r in range(size) if r % 2])
    assert odd.Get_size() == size // 2 and odd.Get_rank() == (rank // 2 if rank % 2 else MPI.UNDEFINED)
    everyone.Free()
    win.Free()


@pytest.mark.rma(nprocs=[1, 2, 3])
def test_shared_dynamic_and_self_windows(comm):
    from rma.compat import MPI

    world = MPI.COMM_WORLD
    rank, size = world.Get_rank(), world.Get_size()
    node = world.Split_type(MPI.COMM_TYPE_SHARED)
    shared = MPI.Win.Allocate_shared(8, 8, comm=node)
    np.frombuffer(shared.tomemory(), "q")[0] = 1000 + node.Get_rank()
    node.Barrier()
    for peer in range(node.Get_size()):
        memory, unit = shared.Shared_query(peer)
        assert unit == 8 and np.frombuffer(memory, "q")[0] == 1000 + peer
    shared.Free()
    node.Free()
    # A dynamic window: attached memory is addressed by MPI.Get_address.
    dynamic = MPI.Win.Create_dynamic(comm=world)
    mine = MPI.Alloc_mem(8)
    np.frombuffer(mine, "q")[0] = 0
    dynamic.Attach(mine)
    addresses = world.allgather(MPI.Get_address(mine))
    right = (rank + 1) % size
    dynamic.Fence()
    dynamic.Put(np.array([rank + 1], "q"), right, addresses[right])
    dynamic.Fence()
    assert np.frombuffer(mine, "q")[0] == (rank - 1) % size + 1
    dynamic.Detach(mine)
    dynamic.Free()
    # COMM_SELF needs no other rank.
    alone = MPI.Win.Allocate(8, 1, comm=MPI.COMM_SELF)
    alone.Fence()
    alone.Put(np.array([7], "q"), 0)
    alone.Fence()
    assert np.frombuffer(alone.tomemory(), "q")[0] == 7
    alone.Free()


@pytest.mark.rma(nprocs=[1, 2, 3, 4])
def test_object_calls_and_requests(comm):
    from rma.compat import MPI

    world = MPI.COMM_WORLD
    rank, size = world.Get_rank(), world.Get_size()
    assert world.bcast({"root": 0} if rank == 0 else None, root=0) == {"root": 0}
    assert world.allreduce(rank, op=MPI.MAX) == size - 1
    assert world.allgather(rank) == list(range(size))
    right, left = (rank + 1) % size, (rank - 1) % size
    request = world.isend(("hello", rank), right, tag=3)
    status = MPI.Status()
    assert world.recv(source=MPI.ANY_SOURCE, tag=3, status=status) == ("hello", left)
    assert status.Get_source() == left and status.Get_tag() == 3
    request.wait()
    dup = world.Dup()
    assert MPI.Comm.Compare(dup, world) == MPI.CONGRUENT
    halves = world.Split(rank % 2, rank)
    assert halves.Get_size() == (size + 1 - rank % 2) // 2
    dup.Free()
    halves.Free()


@pytest.mark.rma(**EVERYWHERE)
def test_the_compiled_calls_agree_with_the_general_path(comm):
    """MPI.Win's data and synchronization calls are compiled for plain arrays and positional
    arguments (src/bindings/facade_window.cpp); every other form goes through Python. Both
    must scale a displacement by the target's own disp_unit (different on each rank here),
    move the same data, and return what mpi4py returns (tests/facade_agreement.py)."""
    from facade_agreement import agree

    agree("Window")


# The window kinds the job's settings make, and the settings that make them.
KINDS = {
    "CheckedWindow": {"RMA_CHECK": "1"},
    "SeparateWindow": {"RMA_MODEL": "separate"},
    "CheckedSeparateWindow": {"RMA_CHECK": "1", "RMA_MODEL": "separate"},
}


@pytest.mark.parametrize("size", [1, 2, 4])
@pytest.mark.parametrize("kind", list(KINDS))
def test_the_compiled_calls_agree_with_the_general_path_in_every_window_kind(kind, size):
    """The same under RMA_CHECK=1 and RMA_MODEL=separate (ranks started by hand with the
    setting): the compiled calls serve these windows too, running the kind's own methods where
    it has them (the separate model's fences and locks make the copies meet), so that a bug of
    the compiled path shows whatever the settings."""
    from handmade_ranks import run_job

    code = (
        f"import sys\nsys.path.insert(0, {str(Path(__file__).parent)!r})\n"
        f"from facade_agreement import agree\nagree({kind!r})\nprint('AGREED', flush=True)\n"
    )
    env = {"RMA_CHECK": "0", "RMA_MODEL": "unified", "RMA_TIMEOUT": "20", "RMA_HANG_REPORT": "0", **KINDS[kind]}
    for rank, (status, out, err) in enumerate(run_job(code, size, env, timeout=120)):
        assert status == 0 and out.splitlines()[-1:] == ["AGREED"], f"rank {rank} of {size}: {out}{err}"


def test_the_compiled_calls_have_mpi4py_signatures():
    import inspect

    from rma.compat import MPI

    assert list(inspect.signature(MPI.Win.Put).parameters) == ["self", "origin", "target_rank", "target"]
    accumulate = inspect.signature(MPI.Win.Accumulate).parameters
    assert accumulate["op"].default is MPI.SUM
    assert inspect.signature(MPI.Win.Lock).parameters["lock_type"].default == MPI.LOCK_EXCLUSIVE
    assert list(inspect.signature(MPI.Win.Compare_and_swap).parameters)[1:] == [
        "origin",
        "compare",
        "result",
        "target_rank",
        "target_disp",
    ]
    assert "MPI_Fetch_and_op" in MPI.Win.Fetch_and_op.__doc__


@pytest.mark.rma(nprocs=[1, 2, 3, 4], timeout=60)
def test_waitany_sleeps_while_it_waits(comm):
    """Request.Waitany polls its requests: between rounds it must sleep, not spin on a core
    that other ranks need."""
    import time

    from rma.compat import MPI

    world = MPI.COMM_WORLD
    rank, size = world.Get_rank(), world.Get_size()
    assert MPI.Request.Waitany([MPI.REQUEST_NULL, MPI.REQUEST_NULL]) == MPI.UNDEFINED
    left, right = (rank - 1) % size, (rank + 1) % size
    pending = [MPI.REQUEST_NULL, world.irecv(source=left, tag=7)]
    world.Barrier()
    if rank == 0:
        time.sleep(0.5)  # every rank's Waitany waits this long for rank 0's message
    sent = world.isend(rank, right, tag=7)
    cpu = time.process_time()
    # (As in mpi4py, the request that completed becomes REQUEST_NULL: waitany returns its object.)
    assert MPI.Request.waitany(pending) == (1, left)
    assert time.process_time() - cpu < 0.25 or rank == 0
    assert pending[1] == MPI.REQUEST_NULL
    sent.wait()


@pytest.mark.rma(nprocs=[2, 3])
def test_errors_are_mpi_exceptions_with_rma_text(comm):
    from rma.compat import MPI

    world = MPI.COMM_WORLD
    win = MPI.Win.Allocate(16, 1, comm=world)
    with pytest.raises(MPI.Exception) as outside:
        win.Put(np.zeros(2, "i"), 1)  # no epoch open
    assert outside.value.Get_error_class() == MPI.ERR_RMA_SYNC
    assert "rma: win.put" in str(outside.value)
    win.Fence()
    with pytest.raises(MPI.Exception) as beyond:
        win.Put(np.zeros(8, "i"), 1, 0)  # 32 bytes into 16
    assert beyond.value.Get_error_class() == MPI.ERR_RMA_RANGE
    with pytest.raises(MPI.Exception) as rank_error:
        win.Put(np.zeros(1, "i"), world.Get_size())
    assert rank_error.value.Get_error_class() == MPI.ERR_RANK
    win.Fence()
    win.Free()
    with pytest.raises(MPI.Exception, match="WIN_NULL"):
        win.Fence()
    with pytest.raises(NotImplementedError, match="Comm.Create_cart is not covered"):
        world.Create_cart  # noqa: B018 - the attribute access itself raises
    assert not hasattr(world, "Create_cart")  # (also an AttributeError)


def test_rmarun_mpi4py_runs_an_unmodified_program(tmp_path):
    program = tmp_path / "ring.py"
    program.write_text(
        textwrap.dedent(
            """
            from mpi4py import MPI
            import numpy as np
            comm = MPI.COMM_WORLD
            rank, size = comm.Get_rank(), comm.Get_size()
            win = MPI.Win.Allocate(8, 8, comm=comm)
            win.Fence()
            win.Put(np.array([rank * 10], "l"), (rank + 1) % size)
            win.Fence()
            print(rank, int(np.frombuffer(win.tomemory(), "l")[0]), MPI.Get_library_version().split()[0])
            win.Free()
            """
        )
    )
    run = subprocess.run(
        [sys.executable, "-m", "rma", "-n", "3", "--mpi4py", sys.executable, str(program)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    rows = sorted(tuple(line.split()) for line in run.stdout.splitlines())
    assert rows == [("0", "20", "rma"), ("1", "0", "rma"), ("2", "10", "rma")]
    # Without --mpi4py the ranks do not find the facade as mpi4py (a real one, if installed, stays).
    plain = subprocess.run(
        [sys.executable, "-m", "rma", "-n", "1", sys.executable, "-c", "import mpi4py; print(mpi4py.__file__)"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "No module named 'mpi4py'" in plain.stderr or "site-packages" in plain.stdout, plain.stderr
    assert "mpi4py_shim" not in plain.stdout
