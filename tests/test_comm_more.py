"""The communicator's fuller calls on real ranks, 1 to 4: reductions of objects and arrays,
scatter, alltoall, sendrecv, isend/irecv, ANY_SOURCE/ANY_TAG with a status, split_type."""

import socket

import numpy as np
import pytest

import rma

EVERYWHERE = dict(nprocs=[1, 2, 3, 4], transports=["shared-memory", "libfabric"], providers=["shm", "tcp"])


@pytest.mark.rma(**EVERYWHERE)
def test_allreduce_and_reduce_of_objects(comm):
    n = comm.size
    assert comm.allreduce(comm.rank + 1) == n * (n + 1) // 2
    assert comm.allreduce(comm.rank, rma.MAX) == n - 1
    assert comm.allreduce(comm.rank + 2, rma.PROD) == np.prod(range(2, n + 2))
    assert comm.allreduce([comm.rank]) == list(range(n))  # SUM is +: lists concatenate
    assert comm.allreduce(comm.rank == 0, rma.LOR) is True
    assert comm.allreduce(1 << comm.rank, rma.BOR) == (1 << n) - 1
    # Any function of two objects, combined in rank order (it need not commute).
    assert comm.allreduce(str(comm.rank), lambda a, b: f"({a}{b})") == _nested(n)
    for root in range(n):
        total = comm.reduce({comm.rank}, lambda a, b: a | b, root=root)
        assert total == (set(range(n)) if comm.rank == root else None)


def _nested(n):
    text = "0"
    for r in range(1, n):
        text = f"({text}{r})"
    return text


@pytest.mark.rma(nprocs=[1, 2])
def test_reduce_ops_that_combine_no_objects_are_refused(comm):
    with pytest.raises(ValueError, match="comm.allreduce: REPLACE does not combine objects"):
        comm.allreduce(1, rma.REPLACE)
    with pytest.raises(TypeError, match="comm.reduce: op must be an rma.Op or a function"):
        comm.reduce(1, "sum")
    assert comm.allreduce(1) == comm.size  # nothing moved before the errors


@pytest.mark.rma(**EVERYWHERE)
def test_scatter_from_every_root(comm):
    for root in range(comm.size):
        items = [("for", r, "from", root) for r in range(comm.size)] if comm.rank == root else None
        assert comm.scatter(items, root=root) == ("for", comm.rank, "from", root)
    # Only the root's sequence is read.
    assert comm.scatter(range(10, 10 + comm.size) if comm.rank == 0 else "ignored") == 10 + comm.rank


@pytest.mark.rma(nprocs=[1, 3])
def test_scatter_needs_one_item_per_rank_on_root(comm):
    if comm.rank == 0:
        with pytest.raises(ValueError, match=rf"comm.scatter: root 0 must pass one item per rank \({comm.size}\)"):
            comm.scatter([1] * (comm.size + 1))
        with pytest.raises(ValueError, match="got None"):
            comm.scatter(None)
    # The others wait in the one scatter that root completes.
    assert comm.scatter(list(range(comm.size))) == comm.rank


@pytest.mark.rma(**EVERYWHERE)
def test_alltoall_transposes(comm):
    received = comm.alltoall([(comm.rank, dest) for dest in range(comm.size)])
    assert received == [(source, comm.rank) for source in range(comm.size)]
    # Items of very different sizes, twice in a row (the rounds never mix).
    for round_ in range(2):
        received = comm.alltoall(["x" * (1000 * dest + comm.rank + round_) for dest in range(comm.size)])
        assert received == ["x" * (1000 * comm.rank + source + round_) for source in range(comm.size)]
    with pytest.raises(ValueError, match=rf"comm.alltoall: rank {comm.rank} must pass one item per rank"):
        comm.alltoall([])


@pytest.mark.rma(**EVERYWHERE)
def test_sendrecv_shifts_around_a_ring_and_to_proc_null(comm):
    right, left = (comm.rank + 1) % comm.size, (comm.rank - 1) % comm.size
    status = rma.Status()
    got = comm.sendrecv(("from", comm.rank), right, sendtag=4, source=left, recvtag=4, status=status)
    assert got == ("from", left)
    assert (status.source, status.tag) == (left, 4)
    # Any source, any tag by default.
    assert comm.sendrecv(comm.rank * 10, right, sendtag=9, status=status) == left * 10
    assert (status.source, status.tag) == (left, 9)
    # A non-periodic shift: the ends talk to rma.PROC_NULL, which sends nothing and receives None.
    dest = comm.rank + 1 if comm.rank + 1 < comm.size else rma.PROC_NULL
    source = comm.rank - 1 if comm.rank > 0 else rma.PROC_NULL
    got = comm.sendrecv(comm.rank, dest, source=source, status=status)
    assert got == (None if comm.rank == 0 else comm.rank - 1)
    assert status.source == (rma.PROC_NULL if comm.rank == 0 else comm.rank - 1)


@pytest.mark.rma(**EVERYWHERE)
def test_any_source_and_any_tag_tell_who_sent(comm):
    if comm.rank != 0:
        comm.send(("hello", comm.rank), dest=0, tag=100 + comm.rank)
        return
    senders = set()
    for _ in range(comm.size - 1):
        status = rma.Status()
        message = comm.recv(rma.ANY_SOURCE, rma.ANY_TAG, status=status)
        assert message == ("hello", status.source)
        assert status.tag == 100 + status.source
        senders.add(status.source)
    assert senders == set(range(1, comm.size))


@pytest.mark.rma(nprocs=[2, 3])
def test_any_source_keeps_each_senders_order(comm):
    # Rank 0 receives, from any source, 3 messages of each other rank: each rank's arrive in
    # the order sent. With a fixed source and ANY_TAG, tags come in the order sent too.
    if comm.rank != 0:
        for i in range(3):
            comm.send((comm.rank, i), dest=0, tag=i)
    else:
        seen: dict[int, list[int]] = {}
        for _ in range(3 * (comm.size - 1)):
            sender, i = comm.recv(rma.ANY_SOURCE, rma.ANY_TAG)
            seen.setdefault(sender, []).append(i)
        assert seen == {r: [0, 1, 2] for r in range(1, comm.size)}
    comm.barrier()


@pytest.mark.rma(nprocs=[2, 4], transports=["shared-memory", "libfabric"], providers=["shm", "tcp"])
def test_a_wildcard_receive_never_takes_a_collectives_message(comm):
    request = comm.irecv(rma.ANY_SOURCE, rma.ANY_TAG) if comm.rank == 0 else None
    # Collectives' messages reach rank 0 while its wildcard receive is posted.
    assert comm.bcast("b" if comm.rank == 1 else None, root=1) == "b"
    assert comm.allgather(comm.rank) == list(range(comm.size))
    comm.barrier()
    assert comm.allreduce(1) == comm.size
    if comm.rank == 0:
        assert not request.test()
    comm.barrier()
    if comm.rank == comm.size - 1:
        comm.send("the user's", dest=0, tag=0)
    if comm.rank == 0:
        status = rma.Status()
        assert request.wait(status) == "the user's"
        assert (status.source, status.tag) == (comm.size - 1, 0)


@pytest.mark.rma(**EVERYWHERE)
def test_isend_irecv_ring_with_test_and_wait(comm):
    right, left = (comm.rank + 1) % comm.size, (comm.rank - 1) % comm.size
    receive = comm.irecv(left, tag=2)
    send = comm.isend({"from": comm.rank}, right, tag=2)
    assert send.test() and send.wait() is None
    while not receive.test():
        pass
    status = rma.Status()
    assert receive.test(status) and (status.source, status.tag) == (left, 2)
    assert receive.wait() == {"from": left}
    assert receive.wait() == {"from": left}  # a completed request keeps its object
    assert "done" in repr(receive)


@pytest.mark.rma(nprocs=[2, 3])
def test_receives_match_in_posting_order(comm):
    if comm.rank == 1:
        for word in ("first", "second", "third"):
            comm.send(word, dest=0, tag=5)
    if comm.rank == 0:
        early = comm.irecv(1, tag=5)
        wildcard = comm.irecv(rma.ANY_SOURCE, rma.ANY_TAG)
        # A blocking recv posted after them gets the third message, whenever the three arrive.
        assert comm.recv(1, tag=5) == "third"
        assert early.wait() == "first"
        assert wildcard.wait() == "second"
    comm.barrier()


@pytest.mark.rma(nprocs=[2, 3])
def test_a_dropped_receive_gives_its_message_to_the_next(comm):
    dropped = comm.irecv(1, tag=8) if comm.rank == 0 else None
    comm.barrier()
    if comm.rank == 1:
        comm.send("kept", dest=0, tag=8)
        comm.send("marker", dest=0, tag=9)
        comm.send("next", dest=0, tag=8)
    if comm.rank == 0:
        # Messages of one source are matched in the order sent: once the marker is here, "kept"
        # has landed in the posted receive.
        assert comm.recv(1, tag=9) == "marker"
        del dropped  # never completed: its message goes back
        later = comm.irecv(1, tag=8)
        del later  # holding "next" or still posted: either way nothing is taken
        assert comm.recv(1, tag=8) == "kept"
        assert comm.recv(1, tag=8) == "next"
    comm.barrier()


@pytest.mark.rma(nprocs=[1, 2])
def test_receive_arguments(comm):
    with pytest.raises(ValueError, match="comm.recv: source must be >= 0, got -5"):
        comm.recv(-5)
    with pytest.raises(ValueError, match="comm.irecv: tag must be >= 0, got -2"):
        comm.irecv(0, tag=-2)
    with pytest.raises(ValueError, match=rf"comm.irecv: source {comm.size} is not a rank"):
        comm.irecv(comm.size)
    with pytest.raises(ValueError, match="comm.send: tag must be >= 0, got -1"):
        comm.send(1, 0, tag=rma.ANY_TAG)  # a send names its tag
    with pytest.raises(ValueError, match="comm.send: dest must be >= 0, got -1"):
        comm.send(1, rma.ANY_SOURCE)
    assert comm.recv(rma.PROC_NULL) is None
    assert comm.irecv(rma.PROC_NULL).wait() is None
    comm.send("lost", rma.PROC_NULL)  # a no-op
    comm.send("mine", comm.rank, tag=0)
    assert comm.recv(rma.ANY_SOURCE) == "mine"


ARRAY_DTYPES = [np.float64, np.int32, np.uint8, np.complex128]


@pytest.mark.rma(**EVERYWHERE)
def test_allreduce_of_arrays(comm):
    n = comm.size
    for dtype in ARRAY_DTYPES:
        data = (np.arange(7) + comm.rank).astype(dtype)
        result = np.zeros(7, dtype)
        comm.Allreduce(data, result)
        np.testing.assert_array_equal(result, sum((np.arange(7) + r).astype(dtype) for r in range(n)))
        np.testing.assert_array_equal(data, (np.arange(7) + comm.rank).astype(dtype))  # sendbuf untouched
    # In place, a 2-D array, MAX and MIN.
    grid = np.full((3, 4), float(comm.rank))
    grid[1, 2] = -comm.rank
    comm.Allreduce(grid, op=rma.MAX)
    expected = np.full((3, 4), float(n - 1))
    expected[1, 2] = 0
    np.testing.assert_array_equal(grid, expected)
    bits = np.array([1 << comm.rank], np.uint64)
    comm.Allreduce(bits, op=rma.BOR)
    assert bits[0] == (1 << n) - 1
    # A strided result (a column) and a large array (many fragments).
    block = np.zeros((5, 3))
    comm.Allreduce(np.ones(5), block[:, 1])
    np.testing.assert_array_equal(block[:, 1], np.full(5, n))
    assert not block[:, [0, 2]].any()
    big = np.full(1 << 20, comm.rank + 1, np.int64)
    comm.Allreduce(big)
    assert (big == n * (n + 1) // 2).all()
    # Floating-point sums whose value depends on the order: every rank gets the same bits.
    noisy = np.random.default_rng(comm.rank).random(100) * 10.0 ** np.arange(-50, 50)
    comm.Allreduce(noisy)
    assert len(set(comm.allgather(noisy.tobytes()))) == 1


@pytest.mark.rma(**EVERYWHERE)
def test_reduce_and_bcast_of_arrays_at_every_root(comm):
    for root in range(comm.size):
        data = np.array([comm.rank, 2 * comm.rank], np.int64)
        result = np.full(2, -1, np.int64)
        comm.Reduce(data, result, op=rma.SUM, root=root)
        total = comm.size * (comm.size - 1) // 2
        expected = [total, 2 * total] if comm.rank == root else [-1, -1]
        np.testing.assert_array_equal(result, expected)
        buf = np.arange(6.0).reshape(2, 3) if comm.rank == root else np.zeros((2, 3))
        comm.Bcast(buf, root=root)
        np.testing.assert_array_equal(buf, np.arange(6.0).reshape(2, 3))


@pytest.mark.rma(nprocs=[1, 2])
def test_array_reduction_arguments(comm):
    with pytest.raises(TypeError, match="comm.Allreduce: sendbuf has dtype object"):
        comm.Allreduce(np.array([object()]))
    with pytest.raises(TypeError, match="comm.Allreduce: op must be an rma.Op"):
        comm.Allreduce(np.ones(2), op=sum)
    readonly = np.ones(3)
    readonly.flags.writeable = False
    with pytest.raises(ValueError, match=r"comm.Allreduce: sendbuf \(in place\) is read-only"):
        comm.Allreduce(readonly)
    with pytest.raises(ValueError, match="comm.Allreduce: recvbuf is 2 x float64 but the data is 3 x float64"):
        comm.Allreduce(np.ones(3), np.zeros(2))
    with pytest.raises(TypeError, match="comm.Allreduce: recvbuf must be a NumPy array"):
        comm.Allreduce(np.ones(3), [0, 0, 0])
    with pytest.raises(ValueError, match="rma: comm.Allreduce: SUM does not reduce bool"):
        comm.Allreduce(np.ones(2, bool))
    with pytest.raises(TypeError, match="comm.Bcast: buf holds Python objects"):
        comm.Bcast(np.array([None]))
    ones = np.ones(2)
    comm.Allreduce(ones)  # nothing moved before the errors
    np.testing.assert_array_equal(ones, [comm.size] * 2)


@pytest.mark.rma(nprocs=[2, 3])
def test_ranks_reducing_arrays_of_different_sizes_are_told(comm):
    # Root 0 combines its children's parts in Reduce: it sees the mismatch; no rank writes
    # past an array.
    data = np.ones(4 if comm.rank == 1 else 2)
    if comm.rank == 0:
        with pytest.raises(ValueError, match="rma: comm.Reduce: rank 0 reduces 2 elements but rank 1 sent 4"):
            comm.Reduce(data, np.zeros(2))
    else:
        comm.Reduce(data)
    comm.barrier()


@pytest.mark.rma(**EVERYWHERE)
def test_split_type_host_joins_the_ranks_of_this_machine(comm):
    host = comm.split_type("host", key=-comm.rank)
    # The ranks with this rank's hostname (all of them on one machine; under --testbed-hosts,
    # those of this test-bed host), ordered by key.
    names = comm.allgather(socket.gethostname())
    mine = [r for r in range(comm.size) if names[r] == names[comm.rank]]
    assert host.size == len(mine)
    assert host.rank == len(mine) - 1 - mine.index(comm.rank)
    assert host.allgather(comm.rank) == list(reversed(mine))
    window = rma.Window.allocate_shared(host, 8, np.int64)
    # Its ranks share memory: a store through one rank's view shows in every other's.
    if host.rank == 0:
        window.shared(0)[0] = 42
    host.barrier()
    assert window.shared(0)[0] == 42
    host.barrier()
    window.free()
    with pytest.raises(ValueError, match="comm.split_type: kind must be \"host\", got 'numa'"):
        comm.split_type("numa")


@pytest.mark.rma(nprocs=2)
def test_allreduce_of_arrays_of_different_sizes_is_refused_on_both_sides(comm):
    # Each rank of an exchange sees the other's size.
    data = np.ones(3 if comm.rank == 1 else 2)
    with pytest.raises(ValueError, match=rf"comm.Allreduce: rank {comm.rank} reduces {data.size} elements but rank"):
        comm.Allreduce(data)
    comm.barrier()
