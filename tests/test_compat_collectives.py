"""Issue 40, item 3: the facade's collectives with mpi4py's buffer specifications, blocking and
nonblocking, and MPI.Op, on real ranks (1 to 4): values computed against formulas, v-forms
with uneven counts, MPI.IN_PLACE, a non-commutative user op combined in rank order, nonblocking
collectives overlapped with point-to-point messages (MPI's progress rule), and errors that
name the call and the rank."""

import threading
import time

import numpy as np
import pytest

from processes import job_of

SIZES = dict(nprocs=[1, 2, 3, 4], timeout=60)
# Also through messages (libfabric), where rma's collectives do not meet in shared memory.
EVERYWHERE = dict(SIZES, transports=["shared-memory", "libfabric"], providers=["shm", "tcp"])


@pytest.mark.rma(**EVERYWHERE)
def test_reductions_give_the_formulas_on_every_path(comm):
    """Allreduce/Reduce on the compiled path (int64, float64) and on NumPy's (complex, bool,
    logical ops on ints), Reduce to every root, and Bcast into a derived datatype."""
    from rma.compat import MPI

    world = MPI.COMM_WORLD
    rank, size = world.Get_rank(), world.Get_size()
    mine = np.arange(5, dtype=np.int64) * (rank + 1)
    total = np.empty_like(mine)
    world.Allreduce(mine, total)  # bare arrays: their dtype
    assert total.tolist() == [i * size * (size + 1) // 2 for i in range(5)]
    highest = np.empty(5)
    world.Allreduce([mine.astype(float), MPI.DOUBLE], [highest, MPI.DOUBLE], MPI.MAX)
    assert highest.tolist() == [float(i * size) for i in range(5)]
    complex_sum = np.zeros(2, np.complex128)
    world.Allreduce(np.array([1 + 1j, rank * 1j]), complex_sum)
    assert complex_sum.tolist() == [size + size * 1j, size * (size - 1) / 2 * 1j]
    every = np.zeros(3, np.int32)
    world.Allreduce(np.array([1, rank, rank % 2], np.int32), every, MPI.LAND)
    assert every.tolist() == [1, 0, 0]  # (rank 0's zeros)
    flags = np.zeros(1, bool)
    world.Allreduce(np.array([rank == size - 1]), flags, MPI.LOR)
    assert flags.tolist() == [True]
    for root in range(size):
        result = np.full(3, -1, np.int16)
        world.Reduce(np.full(3, rank + 1, np.int16), result, MPI.PROD, root)
        expected = int(np.prod(np.arange(1, size + 1)))
        assert result.tolist() == ([expected] * 3 if rank == root else [-1] * 3)
    data = np.arange(8, dtype="i") if rank == 0 else np.full(8, -1, "i")
    evens = MPI.INT.Create_indexed_block(1, [0, 2, 4, 6]).Commit()
    world.Bcast([data, 1, evens], root=0)  # only the elements of the type move
    assert data.tolist() == (list(range(8)) if rank == 0 else [0, -1, 2, -1, 4, -1, 6, -1])


@pytest.mark.rma(**SIZES)
def test_scan_and_exscan_are_prefixes_in_rank_order(comm):
    from rma.compat import MPI

    world = MPI.COMM_WORLD
    rank = world.Get_rank()
    inclusive = np.zeros(2, np.int64)
    world.Scan(np.array([rank + 1, 1], np.int64), inclusive)
    assert inclusive.tolist() == [(rank + 1) * (rank + 2) // 2, rank + 1]
    exclusive = np.full(2, -7.0)
    world.Exscan(np.array([rank + 1.0, 2.0]), exclusive, MPI.SUM)
    assert exclusive.tolist() == ([-7.0, -7.0] if rank == 0 else [rank * (rank + 1) / 2, 2.0 * rank])
    in_place = np.array([rank + 1], np.int32)
    world.Iscan(MPI.IN_PLACE, in_place, MPI.PROD).Wait()
    assert in_place.tolist() == [int(np.prod(np.arange(1, rank + 2)))]
    assert world.scan(rank, op=MPI.SUM) == rank * (rank + 1) // 2
    assert world.exscan([rank], op=MPI.SUM) == (None if rank == 0 else list(range(rank)))


@pytest.mark.rma(**EVERYWHERE)
def test_v_forms_move_uneven_counts_to_their_displacements(comm):
    from rma.compat import MPI

    world = MPI.COMM_WORLD
    rank, size = world.Get_rank(), world.Get_size()
    counts = [i + 1 for i in range(size)]
    displs = [sum(counts[:i]) + i for i in range(size)]  # a gap of one element after each block
    length = displs[-1] + counts[-1] + 1
    mine = np.full(rank + 1, rank, "i")
    expected = np.full(length, -1, "i")
    for i in range(size):
        expected[displs[i] : displs[i] + counts[i]] = i
    for root in range(size):
        gathered = np.full(length, -1, "i")
        world.Gatherv([mine, MPI.INT], [gathered, (counts, displs), MPI.INT], root)
        assert gathered.tolist() == (expected.tolist() if rank == root else [-1] * length)
        received = np.zeros(rank + 1, "i")
        world.Scatterv([expected, (counts, displs), MPI.INT] if rank == root else None, received, root)
        assert received.tolist() == [rank] * (rank + 1)
    everywhere = np.full(length, -1, "i")
    world.Iallgatherv(mine, [everywhere, (counts, displs), MPI.INT]).Wait()
    assert everywhere.tolist() == expected.tolist()
    # Alltoallv: rank r sends j+1 copies of 10 * r + j to rank j, packed.
    send_counts = [j + 1 for j in range(size)]
    outgoing = np.concatenate([np.full(j + 1, 10 * rank + j, "q") for j in range(size)])
    incoming = np.zeros(size * (rank + 1), "q")
    world.Alltoallv([outgoing, send_counts, MPI.INT64_T], [incoming, [rank + 1] * size, MPI.INT64_T])
    assert incoming.tolist() == [10 * i + rank for i in range(size) for _ in range(rank + 1)]


@pytest.mark.rma(**SIZES)
def test_in_place_forms(comm):
    from rma.compat import MPI

    world = MPI.COMM_WORLD
    rank, size = world.Get_rank(), world.Get_size()
    data = np.array([rank, 1], np.int64)
    world.Allreduce(MPI.IN_PLACE, data, MPI.SUM)
    assert data.tolist() == [size * (size - 1) // 2, size]
    rows = np.full((size, 2), -1, "d")
    rows[rank] = rank
    world.Allgather(MPI.IN_PLACE, rows)
    assert rows.tolist() == [[float(i)] * 2 for i in range(size)]
    for root in range(size):
        table = np.full((size, 3), -1, "i")
        if rank == root:
            table[root] = root
            world.Gather(MPI.IN_PLACE, table, root)
            assert table.tolist() == [[root] * 3] * size
        else:
            world.Gather(np.full(3, root, "i"), None, root)
    blocks = np.array([rank] * 2 * size, "i")  # each rank keeps its two elements, summed
    world.Reduce_scatter_block(MPI.IN_PLACE, blocks, MPI.SUM)
    assert blocks[:2].tolist() == [size * (size - 1) // 2] * 2 and blocks[2:].tolist() == [rank] * 2 * (size - 1)


@pytest.mark.rma(**SIZES)
def test_a_non_commutative_user_op_combines_in_rank_order(comm):
    """inout = in * 10 + inout: the digits of the result are the ranks' values in rank order."""
    from rma.compat import MPI

    def digits(inbuf, inoutbuf, datatype):
        assert datatype == MPI.INT64_T
        a, b = np.frombuffer(inbuf, "q"), np.frombuffer(inoutbuf, "q")
        b[:] = a * 10 + b

    world = MPI.COMM_WORLD
    rank, size = world.Get_rank(), world.Get_size()
    op = MPI.Op.Create(digits, commute=False)
    try:
        assert not op.is_commutative and not op.is_predefined
        number = int("".join(str(i + 1) for i in range(size)))
        result = np.zeros(2, "q")
        world.Allreduce([np.array([rank + 1, 1], "q"), MPI.INT64_T], [result, MPI.INT64_T], op)
        assert result.tolist() == [number, int("1" * size)]
        nonblocking = np.zeros(2, "q")
        world.Iallreduce([np.array([rank + 1, 1], "q"), MPI.INT64_T], [nonblocking, MPI.INT64_T], op).Wait()
        assert nonblocking.tolist() == result.tolist()
        for root in range(size):
            at_root = np.zeros(1, "q")
            world.Reduce([np.array([rank + 1], "q"), MPI.INT64_T], [at_root, MPI.INT64_T], op, root)
            assert at_root.tolist() == ([number] if rank == root else [0])
        prefix = np.zeros(1, "q")
        world.Scan([np.array([rank + 1], "q"), MPI.INT64_T], [prefix, MPI.INT64_T], op)
        assert prefix.tolist() == [int("".join(str(i + 1) for i in range(rank + 1)))]
        local = np.array([5], "q")
        op.Reduce_local([np.array([3], "q"), MPI.INT64_T], [local, MPI.INT64_T])
        assert local.tolist() == [35]
        # On objects the function gets (x, y, None), as in mpi4py.
        concat = MPI.Op.Create(lambda x, y, datatype: x + y)
        assert world.allreduce([rank], op=concat) == list(range(size))
        concat.Free()
    finally:
        op.Free()
    assert op == MPI.OP_NULL


@pytest.mark.rma(**dict(EVERYWHERE, nprocs=[2, 3, 4]))
def test_nonblocking_collectives_overlap_point_to_point_messages(comm):
    """Each rank waits for its left neighbour's message before starting the collectives, and
    sends its own only after starting them: were they completed inside the I-calls, rank 0
    would wait there for rank 1, which waits for rank 0's message."""
    from rma.compat import MPI

    world = MPI.COMM_WORLD
    rank, size = world.Get_rank(), world.Get_size()
    if rank > 0:
        assert world.recv(source=rank - 1, tag=5) == rank - 1
    barrier = world.Ibarrier()
    total = np.zeros(1, "i")
    summed = world.Iallreduce(np.array([rank], "i"), total)
    if rank < size - 1:
        sent = world.isend(rank, rank + 1, tag=5)
        sent.wait()
    incoming = world.irecv(source=(rank - 1) % size, tag=6)
    world.isend(("after", rank), (rank + 1) % size, tag=6).wait()
    assert incoming.wait() == ("after", (rank - 1) % size)
    summed.Wait()
    barrier.Wait()
    assert total.tolist() == [size * (size - 1) // 2]
    # A blocking collective comes after the started ones on every rank (same order).
    late = np.zeros(1, "i")
    started = world.Ibcast(late if rank else np.array([42], "i"), root=0)
    world.Barrier()
    assert started.Test() and late.tolist() == [42 if rank else 0]


@pytest.mark.rma(**dict(EVERYWHERE, nprocs=[2, 3, 4]))
def test_a_window_made_while_collectives_are_started_comes_after_them(comm):
    """Window creation is collective over the communicator: it must follow the I-collectives the
    program started on it, on every rank, or the two meet out of order. Rank 0 starts its Ibcast
    late, so the others' Ibcasts wait in their workers while their creation is called."""
    import time

    from rma.compat import MPI

    world = MPI.COMM_WORLD
    rank = world.Get_rank()
    data = np.array([7 if rank == 0 else 0], "i")
    if rank == 0:
        time.sleep(0.2)
    started = [world.Ibcast(data, root=0) for _ in range(3)]
    win = MPI.Win.Allocate(8, 1, comm=world)
    assert all(request.Test() for request in started)  # (they ran first)
    MPI.Request.Waitall(started)
    assert data.tolist() == [7]
    win.Free()


@pytest.mark.rma(**SIZES)
def test_persistent_collectives_run_again_at_each_start(comm):
    """The buffers are bound when the request is made; each Start() reads them anew."""
    from rma.compat import MPI

    world = MPI.COMM_WORLD
    rank, size = world.Get_rank(), world.Get_size()
    mine, total = np.zeros(2, "i"), np.zeros(2, "i")
    summed = world.Allreduce_init(mine, total)
    shared = np.zeros(1, "d")
    sent = world.Bcast_init(shared, root=size - 1)
    for round_ in range(3):
        mine[:] = [rank, round_]
        if rank == size - 1:
            shared[0] = round_ + 0.5
        MPI.Prequest.Startall([summed, sent])
        MPI.Request.Waitall([summed, sent])
        assert total.tolist() == [size * (size - 1) // 2, round_ * size] and shared.tolist() == [round_ + 0.5]
    summed.Free()
    sent.Free()


@pytest.mark.rma(nprocs=[1, 2], timeout=60)
def test_an_idle_worker_sleeps_and_ends(comm):
    from rma.compat import MPI

    world = MPI.COMM_WORLD
    world.Ibarrier().Wait()
    workers = [t for t in threading.enumerate() if t.name.startswith("rma.compat")]
    assert workers and all(t.daemon for t in workers)
    cpu = time.process_time()
    deadline = time.monotonic() + 5
    while any(t.is_alive() for t in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(t.is_alive() for t in workers)
    # Idle, it slept: this process's whole CPU time over that second (the worker looking every
    # millisecond took 35-40 ms of it; every 20 ms, 7-8 ms; rma's progress the rest).
    assert time.process_time() - cpu < 0.025
    world.Ibarrier().Wait()  # a new one starts for the next collective


@pytest.mark.rma(nprocs=[1, 2, 3], timeout=60)
def test_errors_name_the_call_and_the_rank(comm):
    from rma.compat import MPI

    world = MPI.COMM_WORLD
    rank, size = world.Get_rank(), world.Get_size()
    with pytest.raises(ValueError, match=rf"Comm.Allreduce: rank {rank}'s send buffer has 3 elements but its receive"):
        world.Allreduce(np.zeros(3), np.zeros(2))
    with pytest.raises(ValueError, match=r"Comm.Iscan: rank \d+'s send and receive buffers have different datatypes"):
        world.Iscan(np.zeros(2, "i"), np.zeros(2, "f"))
    with pytest.raises(MPI.Exception, match=rf"Comm.Gather: rank {rank}'s buffer holds 8 bytes, the message needs"):
        world.Gather(np.zeros(2), [np.zeros(1), 2, MPI.DOUBLE], root=rank)
    with pytest.raises(MPI.Exception) as bad_root:
        world.Bcast(np.zeros(1), root=size)
    assert bad_root.value.Get_error_class() == MPI.ERR_ROOT and "Comm.Bcast: root" in str(bad_root.value)
    with pytest.raises(MPI.Exception, match="Op.Free: MPI_SUM is predefined"):
        MPI.SUM.Free()
    assert MPI.SUM and MPI.SUM(2, 3) == 5
    with pytest.raises(ValueError, match="Op.Reduce_local: mismatch in inbuf count 2 and inoutbuf count 3"):
        MPI.SUM.Reduce_local(np.zeros(2), np.zeros(3))
    if size > 1:
        # Ranks that disagree on the count: the error comes out of Wait, on every rank.
        started = world.Iallgather(np.zeros(2 if rank == 0 else 1), np.zeros(2 * size if rank == 0 else size))
        with pytest.raises(MPI.Exception, match=rf"Comm.Iallgather: rank {rank} expected \d+ bytes from rank"):
            started.Wait()
    world.Barrier()  # the communicator still works


@pytest.mark.rma(**SIZES)
def test_reduce_scatter_in_place_in_a_larger_buffer_and_a_count_mismatch_raised_on_every_rank(comm):
    from rma.compat import MPI

    world = MPI.COMM_WORLD
    rank, size = world.Get_rank(), world.Get_size()
    buf = np.arange(size + 1, dtype="d") + rank  # one entry past sum(recvcounts), as MPI allows
    world.Reduce_scatter(MPI.IN_PLACE, buf, [1] * size)
    assert buf[0] == sum(rank + other for other in range(size))
    # Rank 0 sends one entry too many: every rank raises (none waits in the reduction).
    with pytest.raises(ValueError, match=f"rank {rank} found that rank 0 sends {size + 1} entries"):
        world.Reduce_scatter(np.ones(size + (1 if rank == 0 else 0)), np.zeros(1))
    world.Barrier()  # (the communicator still works)


FINALIZE_WITH_A_STARTED_COLLECTIVE = """
import time
from rma.compat import MPI
world = MPI.COMM_WORLD
if world.Get_rank() == 1:
    time.sleep(0.5)
started = world.Ibarrier()
MPI.Finalize()  # (rank 0's barrier is still under way in its worker here)
print("finalized", started.Test())
"""


def test_finalize_lets_the_started_collectives_run_first():
    run = job_of(FINALIZE_WITH_A_STARTED_COLLECTIVE, 2)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split("\n").count("finalized True") == 2, run.stdout + run.stderr
