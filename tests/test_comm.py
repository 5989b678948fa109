"""Every rma.Comm call on real ranks: 1 to 4 ranks, over the shm and the tcp provider."""

import os
import resource
import time

import numpy as np
import pytest

import rma
from rma._job import join
from tcp_provider import provider_opened

EVERYWHERE = dict(nprocs=[1, 2, 3, 4], transports=["shared-memory", "libfabric"], providers=["shm", "tcp"])


@pytest.mark.rma(**EVERYWHERE)
def test_rank_size_and_provider(comm):
    assert comm.size == int(os.environ["RMA_SIZE"])
    assert comm.rank == int(os.environ["RMA_RANK"])
    assert join.transport_setting() == os.environ.get("RMA_TRANSPORT", "auto")
    if "RMA_PROVIDER" in os.environ:  # the marker names a provider in its libfabric variants
        assert join.provider() == provider_opened(os.environ["RMA_PROVIDER"])
    assert comm.allgather(comm.rank) == list(range(comm.size))


@pytest.mark.rma(**EVERYWHERE)
def test_barrier_waits_for_the_slowest_rank(comm):
    comm.barrier()
    if comm.rank == comm.size - 1:
        time.sleep(0.3)
    start = time.perf_counter()
    comm.barrier()
    waited = time.perf_counter() - start
    if comm.size > 1 and comm.rank != comm.size - 1:
        assert waited > 0.2
    # back-to-back barriers never mix up their rounds
    for _ in range(20):
        comm.barrier()


@pytest.mark.rma(**EVERYWHERE)
def test_bcast_from_every_root(comm):
    for root in range(comm.size):
        value = {"root": root, "data": list(range(root + 3))} if comm.rank == root else None
        assert comm.bcast(value, root=root) == {"root": root, "data": list(range(root + 3))}
    array = comm.bcast(np.arange(10.0) if comm.rank == 0 else None)
    np.testing.assert_array_equal(array, np.arange(10.0))
    assert comm.bcast(None) is None


@pytest.mark.rma(**EVERYWHERE)
def test_gather_to_every_root(comm):
    for root in range(comm.size):
        gathered = comm.gather((comm.rank, comm.rank**2), root=root)
        if comm.rank == root:
            assert gathered == [(r, r**2) for r in range(comm.size)]
        else:
            assert gathered is None


@pytest.mark.rma(**EVERYWHERE)
def test_allgather_objects_of_different_sizes(comm):
    mine = "x" * (comm.rank * 1000)
    assert comm.allgather(mine) == ["x" * (r * 1000) for r in range(comm.size)]


@pytest.mark.rma(**EVERYWHERE)
def test_send_recv_ring_keeps_order_per_tag(comm):
    right, left = (comm.rank + 1) % comm.size, (comm.rank - 1) % comm.size
    for i in range(5):
        comm.send(("a", comm.rank, i), dest=right, tag=0)
        comm.send(("b", comm.rank, i), dest=right, tag=7)
    # Tag 7 first: messages wait, matched by tag, each tag in the order sent.
    assert [comm.recv(left, tag=7) for _ in range(5)] == [("b", left, i) for i in range(5)]
    assert [comm.recv(left, tag=0) for _ in range(5)] == [("a", left, i) for i in range(5)]


@pytest.mark.rma(**EVERYWHERE)
def test_send_does_not_wait_for_the_receiver(comm):
    # Every rank sends to everyone (itself too) before anyone receives.
    for dest in range(comm.size):
        comm.send(comm.rank * 100 + dest, dest=dest, tag=3)
    assert [comm.recv(source, tag=3) for source in range(comm.size)] == [
        source * 100 + comm.rank for source in range(comm.size)
    ]


@pytest.mark.rma(**EVERYWHERE)
def test_large_objects_travel_whole(comm):
    # Several megabytes: many fragments, on every path.
    payload = np.arange(1_000_000, dtype=np.int64) + comm.rank
    right, left = (comm.rank + 1) % comm.size, (comm.rank - 1) % comm.size
    comm.send(payload, dest=right, tag=1)
    np.testing.assert_array_equal(comm.recv(left, tag=1), np.arange(1_000_000, dtype=np.int64) + left)
    big = comm.bcast(bytes(range(256)) * 20_000 if comm.rank == 0 else None)
    assert big == bytes(range(256)) * 20_000


@pytest.mark.rma(**EVERYWHERE)
def test_split_by_color_and_key(comm):
    color = comm.rank % 2
    half = comm.split(color, key=-comm.rank)  # reversed order inside each half
    expected = sorted((r for r in range(comm.size) if r % 2 == color), reverse=True)
    assert half.size == len(expected)
    assert half.rank == expected.index(comm.rank)
    assert half.allgather(comm.rank) == expected
    # Each half's collectives run on their own, concurrently.
    assert half.bcast(("half", color) if half.rank == 0 else None) == ("half", color)
    half.barrier()
    # Only rank 0 opts out.
    rest = comm.split(None if comm.rank == 0 else 1)
    if comm.rank == 0:
        assert rest is None
    else:
        assert rest.allgather(comm.rank) == list(range(1, comm.size))


@pytest.mark.rma(**EVERYWHERE)
def test_messages_of_different_communicators_never_match(comm):
    other = comm.dup()
    assert (other.rank, other.size) == (comm.rank, comm.size)
    right, left = (comm.rank + 1) % comm.size, (comm.rank - 1) % comm.size
    comm.send("on comm", dest=right)
    other.send("on dup", dest=right)
    assert other.recv(left) == "on dup"
    assert comm.recv(left) == "on comm"


@pytest.mark.rma(**EVERYWHERE)
def test_group(comm):
    group = comm.group
    assert list(group) == list(range(comm.size))
    assert len(group) == comm.size
    assert group == rma.Group(range(comm.size))
    assert list(group.excl([0])) == list(range(1, comm.size))
    assert list(group.incl(reversed(range(comm.size)))) == list(reversed(range(comm.size)))


@pytest.mark.rma(nprocs=[1, 2], transports=["shared-memory", "libfabric"], providers=["shm", "tcp"])
def test_bad_arguments_raise_before_anything_moves(comm):
    with pytest.raises(ValueError, match=rf"comm.send: dest {comm.size} is not a rank"):
        comm.send(1, dest=comm.size)
    with pytest.raises(ValueError, match="comm.recv: source must be >= 0, got -3"):
        comm.recv(-3)
    with pytest.raises(ValueError, match="tag must be >= 0"):
        comm.send(1, dest=0, tag=-1)
    with pytest.raises(ValueError, match="tag 1073741824 is outside"):
        comm.send(1, dest=0, tag=2**30)
    with pytest.raises(TypeError, match="dest must be an integer"):
        comm.send(1, dest=0.5)
    with pytest.raises(ValueError, match="comm.bcast: root"):
        comm.bcast(1, root=comm.size)
    with pytest.raises(TypeError, match="cannot be pickled"):
        comm.send(comm, dest=0)
    # nothing was sent: a message sent now is the first one received
    comm.send("first", dest=comm.rank)
    assert comm.recv(comm.rank) == "first"


def test_group_arguments():
    group = rma.Group([3, 1, 2])
    assert group.incl([2, 0]).ranks == (2, 3)
    assert group.excl([1]).ranks == (3, 2)
    assert 1 in group and 0 not in group
    assert group.rank_of(2) == 2 and group.rank_of(7) is None
    assert rma.Group(np.arange(3)).ranks == (0, 1, 2)
    with pytest.raises(ValueError, match="distinct"):
        rma.Group([1, 1])
    with pytest.raises(ValueError, match="negative"):
        rma.Group([-1])
    with pytest.raises(TypeError, match="integer"):
        rma.Group([1.5])
    for wrong in ([True, 0], [np.True_], [rma.SUM]):  # a bool or a constant is no rank
        with pytest.raises(TypeError, match="integer"):
            rma.Group(wrong)
    with pytest.raises(TypeError, match="integer"):
        group.incl([False])
    with pytest.raises(ValueError, match="member 3 is not in a group of size 3"):
        group.incl([3])


@pytest.mark.rma(nprocs=[1, 4], transports=["shared-memory", "libfabric"], providers=["shm", "tcp"])
def test_idle_ranks_do_not_spin(comm):
    # The progress thread keeps polling, but sleeps between polls when nothing happens.
    comm.barrier()
    before = resource.getrusage(resource.RUSAGE_SELF)
    time.sleep(1.0)
    after = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    assert cpu < 0.1, f"an idle rank used {cpu:.3f} s of CPU in 1 s"
    comm.barrier()
