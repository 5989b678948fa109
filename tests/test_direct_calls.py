"""The direct path of calls to same-host windows (window/data_calls.cpp's *_direct).

rma._core.Window's calls (src/bindings/window_data_calls.cpp) first offer a plain call (a
C-contiguous array of the target's dtype or a Python number, an int rank and displacement, no
target=) to the core's direct path, which declines anything else; the general call then takes
it. These tests check that both paths give the same data, that contention stays exact through
the direct path, and that every call the direct path declines still raises its error. CI also
runs them with RMA_TRANSPORT=libfabric, where the direct path declines everything.
"""

import numpy as np
import pytest

import rma

EVERYWHERE = dict(nprocs=[1, 2, 3, 4])


@pytest.mark.rma(**EVERYWHERE)
def test_raw_window_counter_through_typed_atomics(comm):
    # A uint8 window addressed by byte displacement takes int64 operands (the benchmark's form).
    win = rma.Window.allocate(comm, 64, np.uint8)
    one, fetched = np.ones(1, np.int64), np.zeros(1, np.int64)
    tickets = []
    with win.lock_all():
        for _ in range(100):
            win.fetch_and_op(one, fetched, 0, 8)
            win.flush(0)
            tickets.append(int(fetched[0]))
    everyone = sorted(t for mine in comm.allgather(tickets) for t in mine)
    assert everyone == list(range(100 * comm.size))  # each ticket handed out once
    comm.barrier()
    if comm.rank == 0:
        assert win.local[8:16].view(np.int64)[0] == 100 * comm.size
    comm.barrier()
    win.free()


@pytest.mark.rma(**EVERYWHERE)
def test_compare_and_swap_elects_one_rank(comm):
    win = rma.Window.allocate(comm, 4, np.int64)
    mine, free, old = np.array([comm.rank + 1], np.int64), np.zeros(1, np.int64), np.zeros(1, np.int64)
    with win.lock_all():
        win.compare_and_swap(mine, free, old, 0, 2)
        win.flush(0)
    winners = [rank for rank, was in enumerate(comm.allgather(int(old[0]))) if was == 0]
    assert len(winners) == 1
    comm.barrier()
    if comm.rank == 0:
        assert win.local[2] == winners[0] + 1
    comm.barrier()
    win.free()


@pytest.mark.rma(**EVERYWHERE)
def test_fast_and_general_paths_agree(comm):
    # The same calls once with contiguous arrays (fast path) and once with strided views of
    # the same values (general path), into two halves of every rank's window.
    n = 6
    win = rma.Window.allocate(comm, 4 * n, np.float64)
    peer = (comm.rank + 1) % comm.size
    values = np.arange(n, dtype=np.float64) + 10 * comm.rank
    strided = np.zeros(2 * n)[::2]
    strided[:] = values
    with win.fence():
        win.put(values, peer, 0)
        win.put(strided, peer, n)
        win.accumulate(values, peer, 2 * n, op=rma.MAX)
        win.accumulate(strided, peer, 3 * n, op=rma.MAX)
    got, got_strided = np.zeros(4 * n), np.zeros(8 * n)[::2]
    with win.fence():
        win.get(got, peer)
        win.get(got_strided, peer)  # a non-contiguous result: filled at the fence
    np.testing.assert_array_equal(got, got_strided)
    np.testing.assert_array_equal(got[:n], values)
    np.testing.assert_array_equal(got[n : 2 * n], values)
    np.testing.assert_array_equal(got[2 * n :], np.concatenate([values, values]))
    win.free()


@pytest.mark.rma(**EVERYWHERE)
def test_flush_finishes_a_general_path_result(comm):
    # A strided result needs a copy at flush; flush must not take the fast path past it.
    win = rma.Window.allocate(comm, 8, np.int32)
    win.local[:] = np.arange(8) + 100 * comm.rank
    comm.barrier()
    peer = comm.size - 1 - comm.rank
    result = np.zeros(16, np.int32)
    with win.lock(peer, rma.LOCK_SHARED):
        win.get(result[::2], peer)
        win.flush(peer)
        np.testing.assert_array_equal(result[::2], np.arange(8) + 100 * peer)
    comm.barrier()
    win.free()


@pytest.mark.rma(nprocs=[1, 2, 3])
def test_overlapping_put_into_own_window(comm):
    win = rma.Window.allocate(comm, 16, np.int64)
    win.local[:] = np.arange(16)
    with win.lock(comm.rank):
        win.put(win.local[0:8], comm.rank, 4)  # origin and target overlap
    np.testing.assert_array_equal(win.local, np.concatenate([np.arange(4), np.arange(8), np.arange(12, 16)]))
    comm.barrier()
    win.free()


@pytest.mark.rma(nprocs=[1, 2])
def test_large_put_and_get(comm):
    # Copies from 256 KiB on let other Python threads run; the data must not care.
    count = 1 << 18  # 2 MiB of float64
    win = rma.Window.allocate(comm, count, np.float64)
    peer = (comm.rank + 1) % comm.size
    data = np.random.default_rng(comm.rank).random(count)
    with win.lock(peer):
        win.put(data, peer)
        win.flush(peer)
        back = np.empty_like(data)
        win.get(back, peer)
    np.testing.assert_array_equal(back, data)
    win.free()


@pytest.mark.rma(nprocs=[1, 2])
def test_declined_calls_raise_their_errors(comm):
    win = rma.Window.allocate(comm, 4, np.float64)
    peer = comm.size - 1
    one, two = np.ones(1), np.ones(2)
    with pytest.raises(rma.EpochError):
        win.put(one, peer)  # no epoch
    with win.lock_all():
        with pytest.raises(rma.TargetRangeError):
            win.put(np.ones(5), peer)
        with pytest.raises(rma.TargetRangeError):
            win.get(one.copy(), peer, 4)
        with pytest.raises(TypeError, match="dtype"):
            win.put(np.ones(1, np.float32), peer)
        with pytest.raises(TypeError, match="BAND"):
            win.accumulate(one, peer, op=rma.BAND)
        with pytest.raises(ValueError, match="exactly one element"):
            win.fetch_and_op(two, two.copy(), peer)
        readonly = np.zeros(1)
        readonly.flags.writeable = False
        with pytest.raises(ValueError, match="not writable"):
            win.get(readonly, peer)
        with pytest.raises(ValueError, match="not a rank"):
            win.put(one, comm.size)
        with pytest.raises(TypeError, match="compare_and_swap"):
            win.compare_and_swap(one, one, one.copy(), peer)  # floats cannot be compared
        win.put(one, rma.PROC_NULL)  # declined by the fast path, a no-op on the general one
        win.put(one, np.int64(peer), comm.rank)  # a NumPy integer rank works (general path); bytes of its own
        win.flush(peer)
    comm.barrier()
    win.free()
    with pytest.raises(rma.RMAError, match="freed"):
        win.put(one, peer)


@pytest.mark.rma(nprocs=[1, 2, 3])
def test_keywords_and_positionals_both_work(comm):
    # The fronts parse arguments themselves: every way of passing them must mean the same.
    win = rma.Window.allocate(comm, 8, np.int64)
    peer = (comm.rank + 1) % comm.size
    two = np.array([7, 8], np.int64)
    fetched = np.zeros(1, np.int64)
    with win.lock(peer):
        win.put(origin=two, target_rank=peer, target_disp=0)
        win.put(two, peer, target=slice(2, 4))  # target= goes the general way
        win.accumulate(two, peer, 4, op=rma.MAX)
        win.accumulate(two, target_rank=peer, target_disp=6)  # op defaults to SUM
        win.fetch_and_op(np.ones(1, np.int64), fetched, peer, target_disp=6, op=rma.SUM)
        win.flush(rank=peer)
        got = np.zeros(8, np.int64)
        win.get(result=got, target_rank=peer)
    comm.barrier()
    assert fetched[0] == 7
    np.testing.assert_array_equal(got, [7, 8, 7, 8, 7, 8, 8, 8])
    comm.barrier()
    win.free()


@pytest.mark.rma(nprocs=[1, 2])
def test_bad_arguments_raise_as_the_methods_do(comm):
    win = rma.Window.allocate(comm, 4, np.int64)
    one = np.ones(1, np.int64)
    with win.lock_all():
        with pytest.raises(TypeError):
            win.put(one)  # no rank
        with pytest.raises(TypeError, match="bogus"):
            win.put(one, 0, bogus=1)
        with pytest.raises(TypeError):
            win.put(one, 0, 0, 0)  # too many positionals
        with pytest.raises(TypeError):
            win.put(one, 0, target_rank=0)  # twice
        with pytest.raises(TypeError):
            win.flush()
        with pytest.raises(TypeError, match="target_disp must be an integer"):
            win.get(one.copy(), 0, "0")
    assert win.put.__doc__ == rma.Window.put.__doc__
    assert "put" in repr(win.put)
    comm.barrier()
    win.free()


@pytest.mark.rma(nprocs=[1, 2, 3])
def test_epoch_fronts_take_every_form_of_their_arguments(comm):
    win = rma.Window.allocate(comm, 4, np.int64)
    peer = (comm.rank + 1) % comm.size
    left = (comm.rank - 1) % comm.size
    one = np.ones(1, np.int64)
    with win.fence(mode=0):
        win.put(one, peer)
    win.fence(rma.Mode.NOSTORE)  # a flag, not an int: the general path
    win.fence(rma.Mode.NOSUCCEED)
    with win.post(group=[left]), win.start(rma.Group([peer])):  # list fast, Group general
        win.accumulate(one, peer, 1)
    with win.post([left], mode=0), win.start([peer], 0):
        win.accumulate(one, peer, 1)
    with win.lock(rank=peer, lock_type=rma.LOCK_SHARED, mode=0) as same:
        assert same is win
        got = np.zeros(4, np.int64)
        win.get(got, peer)
    with win.lock(np.int64(peer)):  # a NumPy rank: the general path, same epoch
        pass
    assert list(got) == [1, 2, 0, 0]
    comm.barrier()
    win.free()


@pytest.mark.rma(nprocs=[1, 2])
def test_epoch_fronts_raise_what_the_methods_raise(comm):
    win = rma.Window.allocate(comm, 4, np.int64)
    peer = comm.size - 1
    with pytest.raises(rma.EpochError, match="no access epoch"):
        win.complete()
    with pytest.raises(rma.EpochError, match="no exposure epoch"):
        win.wait()
    with pytest.raises(rma.EpochError, match="holds no lock"):
        win.unlock(peer)
    with pytest.raises(ValueError, match="not a combination"):
        win.fence(64)
    with pytest.raises(TypeError, match="lock_type"):
        win.lock(peer, 3)
    with pytest.raises(ValueError, match="not a rank"):
        win.lock(comm.size)
    with pytest.raises(ValueError, match="distinct"):
        win.post([peer, peer])
    with pytest.raises(TypeError):
        win.start(["a"])
    with pytest.raises(TypeError):
        win.fence(0, 0)
    comm.barrier()
    win.free()
    with pytest.raises(rma.RMAError, match="freed"):
        win.fence()
    quiet = rma.Window.allocate(comm, 1, np.int64, info={"no_locks": True})
    with pytest.raises(rma.EpochError, match="no_locks"):
        quiet.lock(0)
    comm.barrier()
    quiet.free()


@pytest.mark.rma(nprocs=[1, 2, 3])
def test_python_numbers_as_single_operands(comm):
    # fetch_and_op and compare_and_swap take Python ints and floats too; the fronts convert
    # them when the conversion is exact, the general path otherwise (as NumPy would).
    ints = rma.Window.allocate(comm, 2, np.uint8)
    floats = rma.Window.allocate(comm, 1, np.float32)
    # (A result array for each call: two pending calls must not fill one, which RMA_CHECK reports.)
    small, real = np.zeros(2, np.uint8), np.zeros(2, np.float32)
    with ints.lock_all(), floats.lock_all():
        ints.fetch_and_op(2, small[:1], 0)
        floats.fetch_and_op(0.5, real[:1], 0)
        floats.fetch_and_op(1, real[1:], 0, op=rma.SUM)  # an int into a float32 window
        ints.compare_and_swap(7, 0, small[1:], 0, 1)  # one rank wins
    comm.barrier()
    if comm.rank == 0:
        assert ints.local[0] == 2 * comm.size
        assert floats.local[0] == 1.5 * comm.size
        assert ints.local[1] == 7
    comm.barrier()
    with ints.lock(0):
        with pytest.raises(ValueError, match="does not fit uint8"):
            ints.fetch_and_op(300, small[:1], 0)
    comm.barrier()
    ints.free()
    floats.free()


@pytest.mark.rma(nprocs=[1, 2])
def test_proc_null_keeps_nothing_and_leaves_results_alone(comm):
    win = rma.Window.allocate(comm, 4, np.int64)
    result = np.full(8, 5, np.int64)
    with win.lock_all():
        win.get(result[::2], rma.PROC_NULL)  # a strided result: no stand-in copied back
        win.put(np.ones(4, np.int64), rma.PROC_NULL)
        win.fetch_and_op(np.ones(1, np.int64), result[:1], rma.PROC_NULL)
        assert win._held_count() == 0  # nothing held for calls that move nothing
        win.flush_all()
    assert list(result) == [5] * 8
    with win.lock(0):
        with pytest.raises(rma.TargetRangeError, match="beyond any window"):
            win.put(np.ones(1, np.int64), 0, 1 << 62)  # disp * 8 overflows 64 bits
    comm.barrier()
    win.free()
