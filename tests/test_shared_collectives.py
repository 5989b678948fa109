"""The small collectives in shared memory (src/core/host/shared_exchange.hpp): where every rank
of a communicator shares a host, allgather, allreduce, alltoall and Allreduce of a few values go
through cells of the communicator's barrier slot, with one barrier and no message. Rounds in a
row, ranks running at different speeds, barriers in between and contributions on both sides of
what a cell holds must all give what messages give. Timing-free: each check is of values."""

import ctypes
import hashlib
import os
import random
import time

import numpy as np
import pytest

import rma

EVERYWHERE = dict(nprocs=[1, 2, 3, 4], transports=["shared-memory", "libfabric"], providers=["shm", "tcp"])


@pytest.mark.rma(nprocs=[1, 2, 3, 4], timeout=120)
def test_rounds_in_a_row_never_read_a_stale_or_overwritten_cell(comm):
    # Each round's contributions depend on the round, so a rank that read a cell of another
    # round (its writer already a round ahead, or not there yet) computes a wrong value. Some
    # rounds sleep on one rank, so the others run ahead to the next round's barrier; plain
    # barriers in between move the barrier's round on too.
    n = comm.size
    rng = random.Random(comm.rank)
    wrong = []
    for round_ in range(2000):
        if rng.random() < 0.01:
            time.sleep(rng.uniform(0, 0.002))
        mine = np.array([round_ * 10 + comm.rank, 1.0])
        total = np.empty(2)
        comm.Allreduce(mine, total)
        expected = round_ * 10 * n + n * (n - 1) // 2
        if total[0] != expected or total[1] != n:
            wrong.append(("Allreduce", round_, total.tolist()))
        gathered = comm.allgather((round_, comm.rank))
        if gathered != [(round_, r) for r in range(n)]:
            wrong.append(("allgather", round_, gathered))
        if comm.allreduce(round_ + comm.rank) != n * round_ + n * (n - 1) // 2:
            wrong.append(("allreduce", round_))
        received = comm.alltoall([(round_, comm.rank, dest) for dest in range(n)])
        if received != [(round_, source, comm.rank) for source in range(n)]:
            wrong.append(("alltoall", round_, received))
        root = round_ % n
        if comm.bcast((round_, "from", comm.rank), root=root) != (round_, "from", root):
            wrong.append(("bcast", round_))
        gathered = comm.gather(round_ * n + comm.rank, root=root)
        if gathered != ([round_ * n + r for r in range(n)] if comm.rank == root else None):
            wrong.append(("gather", round_, gathered))
        if round_ % 7 == 0:
            comm.barrier()
        if round_ % 11 == 0:
            root = round_ % n
            result = np.zeros(1, np.int64)
            comm.Reduce(np.array([round_ + comm.rank], np.int64), result, root=root)
            if comm.rank == root and result[0] != n * round_ + n * (n - 1) // 2:
                wrong.append(("Reduce", round_, int(result[0])))
    assert wrong == [], wrong[:5]


@pytest.mark.rma(**EVERYWHERE)
def test_contributions_on_both_sides_of_a_cell(comm):
    # A cell holds 248 bytes: 31 float64 fit, 32 do not. Ranks whose contributions differ in
    # size, some fitting and some not, all get every one (allgather goes through messages then).
    n = comm.size
    for count in [1, 30, 31, 32, 33, 200]:
        mine = np.arange(count, dtype=np.float64) + comm.rank
        total = np.empty(count)
        comm.Allreduce(mine, total)
        np.testing.assert_array_equal(total, np.arange(count) * n + n * (n - 1) // 2)
        product = mine.copy()
        comm.Allreduce(product, op=rma.MAX)  # in place
        np.testing.assert_array_equal(product, np.arange(count) + n - 1)
    for length in [0, 200, 240, 247, 248, 249, 300, 5000]:
        # Every rank's own size: around the cell's size for some ranks and not others.
        mine = bytes([comm.rank]) * (length + comm.rank * 3)
        assert comm.allgather(mine) == [bytes([r]) * (length + r * 3) for r in range(n)]
    for length in [0, 20, 30, 45, 60, 200]:
        # alltoall: each rank's parts go into its cell together, fitting on some ranks only.
        parts = [bytes([comm.rank, dest]) * (length + comm.rank * 7) for dest in range(n)]
        expected = [bytes([source, comm.rank]) * (length + source * 7) for source in range(n)]
        assert comm.alltoall(parts) == expected


@pytest.mark.rma(nprocs=[2, 3, 4])
def test_a_size_mismatch_that_fits_and_one_that_does_not_are_both_told(comm):
    # One rank's array does not fit a cell while the others' do: no rank may take another path
    # than the rest (that would leave them waiting for each other). Each is told. (Through
    # messages, only the ranks that exchange with the odd one out can see it.)
    if not comm._core.barrier_in_shared_memory:
        pytest.skip("the ranks meet through messages (not all on one host)")
    for sizes in [(2, 3), (2, 40)]:
        data = np.ones(sizes[1] if comm.rank == comm.size - 1 else sizes[0])
        with pytest.raises(
            ValueError, match=rf"comm.Allreduce: rank {comm.rank} reduces {data.size} elements but rank"
        ):
            comm.Allreduce(data)
        comm.barrier()
    ones = np.ones(3)
    comm.Allreduce(ones)  # the communicator still works
    np.testing.assert_array_equal(ones, [comm.size] * 3)


# ---- arrays too large for the cells: each rank reads the others' memory ----


@pytest.mark.rma(**EVERYWHERE)
def test_large_allreduce_by_reading_each_others_memory(comm):
    # Ranks of one host read the others' arrays (process_vm_readv): whole arrays below 32 KiB,
    # and from there on, each rank its share of the elements. Shares of unequal size (a count
    # that the rank count does not divide), in place and not, a strided result, and other ops
    # and dtypes.
    n = comm.size
    for count in [40, 1001, 4095, 4099, 1 << 17]:
        data = np.arange(count, dtype=np.int64) * (comm.rank + 1)
        total = np.empty(count, np.int64)
        comm.Allreduce(data, total)
        np.testing.assert_array_equal(total, np.arange(count) * (n * (n + 1) // 2))
        np.testing.assert_array_equal(data, np.arange(count) * (comm.rank + 1))  # sendbuf untouched
        comm.Allreduce(data, op=rma.MAX)  # in place
        np.testing.assert_array_equal(data, np.arange(count) * n)
    column = np.zeros((5000, 2), np.float32)
    comm.Allreduce(np.full(5000, comm.rank + 1, np.float32), column[:, 1])
    np.testing.assert_array_equal(column[:, 1], np.full(5000, n * (n + 1) // 2))
    assert not column[:, 0].any()
    # Sums whose value depends on the order: every rank gets the same bits.
    noisy = np.random.default_rng(comm.rank).random(20000) * 10.0 ** np.resize(np.arange(-50, 50), 20000)
    comm.Allreduce(noisy)
    assert len(set(comm.allgather(hashlib.sha256(noisy.tobytes()).hexdigest()))) == 1


@pytest.mark.rma(nprocs=[2, 3, 4])
def test_a_rank_whose_reads_are_refused_sends_every_rank_through_messages(comm):
    # A rank that the kernel does not let read the others' memory (here: its real and effective
    # user no longer root) fails its reads, while the others read it: every rank must go on
    # through messages alike, and get the right sums. (Nothing is imported while rank 1 is
    # another user: it may not read the Python installation.)
    if os.geteuid() != 0:
        pytest.skip("needs root, to take another user on one rank and back")
    if not comm._core.barrier_in_shared_memory:
        # (Through libfabric, the shm provider itself copies between processes with the same
        # calls: a rank of another user breaks the provider, not what this test is about.)
        pytest.skip("the ranks meet through messages: no rank reads another's memory in Allreduce")
    pids = comm.allgather(os.getpid())
    libc = ctypes.CDLL(None, use_errno=True)
    # Arrays read whole (1000 elements) and by shares (1 << 15).
    arrays = [np.full(count, comm.rank + 1, np.int64) for count in [1000, 1 << 15, 1000]]
    totals = [np.empty_like(data) for data in arrays]
    refused = True
    if comm.rank == 1:
        os.setresuid(65534, 65534, 0)  # (the saved root lets it come back)
    try:
        if comm.rank == 1:
            # The premise: this rank can no longer read rank 0.
            buffer = ctypes.create_string_buffer(8)
            here = (ctypes.c_void_p * 2)(ctypes.cast(buffer, ctypes.c_void_p), 8)
            there = (ctypes.c_void_p * 2)(arrays[0].ctypes.data, 8)  # (any address: the check comes first)
            refused = libc.process_vm_readv(pids[0], here, 1, there, 1, 0) == -1
        for data, total in zip(arrays, totals):
            comm.Allreduce(data, total)
    finally:
        if comm.rank == 1:
            os.setresuid(0, 0, 0)
    assert refused
    for total in totals:
        np.testing.assert_array_equal(total, np.full(total.size, comm.size * (comm.size + 1) // 2))
