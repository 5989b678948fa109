"""Windows, every communication call and fence epochs, on real ranks: 1 to 4, shm and tcp."""

import gc
import os
import socket

import numpy as np
import pytest

import rma

EVERYWHERE = dict(nprocs=[1, 2, 3, 4], transports=["shared-memory", "libfabric"], providers=["shm", "tcp"])
SENTINEL = -7


def expected_transport(comm) -> str:
    """What win.transport says of an allocate or create window over comm: libfabric when forced,
    else shared memory among the ranks of one host, and "mixed" when they span hosts
    (--testbed-hosts)."""
    if os.environ.get("RMA_TRANSPORT") == "libfabric":
        return "libfabric"
    return "shared-memory" if len(set(comm.allgather(socket.gethostname()))) == 1 else "mixed"


DTYPES = [
    "bool",
    "int8",
    "uint8",
    "int16",
    "uint16",
    "int32",
    "uint32",
    "int64",
    "uint64",
    "float32",
    "float64",
    "complex64",
    "complex128",
    "longdouble",
]
INTEGERS = {"int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"}
# Which ops apply to which dtypes, as API.md states it (the test's own table, not the library's).
FITS = {
    rma.SUM: INTEGERS | {"float32", "float64", "longdouble", "complex64", "complex128"},
    rma.PROD: INTEGERS | {"float32", "float64", "longdouble", "complex64", "complex128"},
    rma.MIN: INTEGERS | {"float32", "float64", "longdouble"},
    rma.MAX: INTEGERS | {"float32", "float64", "longdouble"},
    rma.LAND: INTEGERS | {"bool"},
    rma.LOR: INTEGERS | {"bool"},
    rma.LXOR: INTEGERS | {"bool"},
    rma.BAND: INTEGERS,
    rma.BOR: INTEGERS,
    rma.BXOR: INTEGERS,
    rma.REPLACE: set(DTYPES),
    rma.NO_OP: set(DTYPES),
}


def values(dtype, count, seed):
    """Deterministic test values of `dtype` that every rank can compute."""
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return rng.integers(0, 2, count).astype(bool)
    if dtype.kind in "iu":
        return rng.integers(0, 5, count).astype(dtype)
    if dtype.kind == "c":
        return (rng.integers(1, 4, count) + 1j * rng.integers(1, 4, count)).astype(dtype)
    return rng.integers(1, 5, count).astype(dtype)


@pytest.mark.rma(**EVERYWHERE)
def test_put_and_get_every_count_leave_sentinels_alone(comm):
    win = rma.Window.allocate(comm, 70, np.int64)
    right, left = (comm.rank + 1) % comm.size, (comm.rank - 1) % comm.size
    for count in range(65):
        win.local[:] = SENTINEL
        win.fence()
        win.put(np.arange(count, dtype=np.int64) + 1000 * comm.rank, right, 3)
        win.fence()
        expected = np.full(70, SENTINEL)
        expected[3 : 3 + count] = np.arange(count) + 1000 * left
        np.testing.assert_array_equal(win.local, expected)
        result = np.full(count + 1, SENTINEL, dtype=np.int64)
        win.get(result[:count], right, 3)
        win.fence()
        np.testing.assert_array_equal(result[:count], np.arange(count) + 1000 * comm.rank)
        assert result[count] == SENTINEL
    win.free()


@pytest.mark.rma(**EVERYWHERE)
def test_every_target_form(comm):
    win = rma.Window.allocate(comm, (4, 6, 5), np.float64)
    shape = win.shape
    forms = [
        np.s_[2:10:2],  # a stepped slice of the first axis... of a 3-D window
        np.s_[1],  # an integer: a 2-D plane
        np.s_[:, 3],  # rows of a column plane
        np.s_[:, :, 4],  # a column
        np.s_[1:3, 2:5, 1:4],  # a sub-block
        np.s_[::-1, 0, ::2],  # reversed and stepped
        np.s_[3, 5, 4],  # one element
        np.s_[..., 0],  # Ellipsis
        np.s_[2:2],  # empty
    ]
    right, left = (comm.rank + 1) % comm.size, (comm.rank - 1) % comm.size
    reference = np.zeros(shape)
    for number, form in enumerate(forms):
        selected = reference[form].shape
        data = np.arange(np.prod(selected), dtype=np.float64).reshape(selected) + 100 * number + comm.rank
        win.local[:] = -1
        win.fence()
        win.put(data, right, target=form)
        win.fence()
        expected = np.full(shape, -1.0)
        expected[form] = data - comm.rank + left
        np.testing.assert_array_equal(win.local, expected, err_msg=f"put target={form}")
        back = np.zeros(selected)
        win.get(back, right, target=form)
        win.fence()
        np.testing.assert_array_equal(back, data, err_msg=f"get target={form}")
    win.free()


@pytest.mark.rma(**EVERYWHERE)
def test_strided_origin_and_result(comm):
    win = rma.Window.allocate(comm, 8, np.int32)
    right = (comm.rank + 1) % comm.size
    source = np.arange(16, dtype=np.int32).reshape(4, 4)
    win.fence()
    win.put(source[:, 1], right)  # a column: strided origin, taken in C order
    win.fence()
    result = np.zeros((2, 8), dtype=np.int32)
    win.get(result[1, ::2], right)  # a strided result
    win.fence()
    np.testing.assert_array_equal(result[1, ::2], [1, 5, 9, 13])
    assert not result[0].any() and not result[1, 1::2].any()
    win.free()


@pytest.mark.rma(**EVERYWHERE)
def test_calls_larger_than_one_message_land_whole(comm):
    # Through libfabric, a call that travels as a message (an accumulate; a strided put or get)
    # and is larger than one 64 KiB fragment goes as pieces, each served as it comes. The
    # target's memory must end as if the call came whole: every element in the origin's C order,
    # across the pieces' edges, inside rows (a row of 12,000 int64 is 96 KB) and between them.
    shape = (6, 24_000)
    win = rma.Window.allocate(comm, shape, np.int64)
    right, left = (comm.rank + 1) % comm.size, (comm.rank - 1) % comm.size
    mine = np.arange(6 * 12_000, dtype=np.int64).reshape(6, 12_000) * (comm.rank + 1)
    wide = np.s_[:, ::2]  # every other column: no row is one run
    win.local[:] = 1
    win.fence()
    win.accumulate(mine, right, target=wide, op=rma.SUM)
    win.fence()
    expected = np.ones(shape, np.int64)
    expected[wide] += np.arange(6 * 12_000, dtype=np.int64).reshape(6, 12_000) * (left + 1)
    np.testing.assert_array_equal(win.local, expected)
    comm.barrier()  # (looked at before the next calls come)
    # A fetching accumulate returns the elements of before, piece by piece into its result:
    # those of the right neighbour, which this rank's accumulate made.
    fetched = np.zeros((6, 12_000), np.int64)
    win.get_accumulate(mine, fetched, right, target=wide, op=rma.SUM)
    win.fence()
    np.testing.assert_array_equal(fetched, 1 + mine)
    # A strided put and get: the odd columns.
    win.put(-mine, right, target=np.s_[:, 1::2])
    win.fence()
    back = np.zeros((6, 12_000), np.int64)
    win.get(back, right, target=np.s_[:, 1::2])
    win.fence()
    np.testing.assert_array_equal(back, -mine)
    np.testing.assert_array_equal(
        win.local[:, 1::2], -np.arange(6 * 12_000, dtype=np.int64).reshape(6, 12_000) * (left + 1)
    )
    win.free()


@pytest.mark.rma(**EVERYWHERE)
def test_accumulate_every_op_and_dtype_against_numpy(comm):
    count = 6
    for dtype in DTYPES:
        win = rma.Window.allocate(comm, count, dtype)
        for op in rma.Op:
            if dtype not in FITS[op]:
                with pytest.raises(TypeError, match=f"{op.name} does not apply to {np.dtype(dtype)}"):
                    win.accumulate(values(dtype, count, 0), 0, op=op)
                continue
            start = values(dtype, count, seed=1)
            win.local[:] = start
            win.fence()
            # Everyone accumulates its values into rank 0, and get_accumulates into the last rank.
            fetched = np.zeros(count, dtype)
            win.accumulate(values(dtype, count, seed=10 + comm.rank), 0, op=op)
            win.get_accumulate(values(dtype, count, seed=20 + comm.rank), fetched, comm.size - 1, op=op)
            win.fence(rma.Mode.NOSUCCEED)
            mine = [values(dtype, count, seed=10 + r) for r in range(comm.size)]
            if comm.rank == 0:
                if op == rma.REPLACE:
                    # Atomic per element: each element holds some update's value.
                    options = [values(dtype, count, seed=20)] if comm.size == 1 else mine
                    for i in range(count):
                        assert any(win.local[i] == option[i] for option in options), (op, dtype, i)
                else:
                    expected = start  # the other ops commute: any order gives this
                    for update in mine:
                        expected = op(expected, update)
                    if comm.size == 1:  # the get_accumulate went to rank 0 too, after
                        np.testing.assert_array_equal(fetched, expected, err_msg=f"{op.name} {dtype}")
                        expected = op(expected, values(dtype, count, seed=20))
                    np.testing.assert_array_equal(win.local, expected, err_msg=f"{op.name} {dtype}")
        win.free()


@pytest.mark.rma(**EVERYWHERE)
def test_get_accumulate_fetches_the_old_values(comm):
    win = rma.Window.allocate(comm, 5, np.int64)
    win.local[:] = np.arange(5) * 10
    win.fence()
    old = np.zeros(5, np.int64)
    win.get_accumulate(np.ones(5, np.int64), old, comm.rank, op=rma.SUM)
    win.fence()
    np.testing.assert_array_equal(old, np.arange(5) * 10)
    np.testing.assert_array_equal(win.local, np.arange(5) * 10 + 1)
    win.get_accumulate(np.zeros(5, np.int64), old, comm.rank, op=rma.NO_OP)
    win.fence()
    np.testing.assert_array_equal(old, np.arange(5) * 10 + 1)
    np.testing.assert_array_equal(win.local, np.arange(5) * 10 + 1)
    win.free()


@pytest.mark.rma(**EVERYWHERE)
def test_contention_on_one_element_is_exact(comm):
    win = rma.Window.allocate(comm, 4, np.int64)
    rounds = 100
    tickets = []
    win.fence()
    for _ in range(rounds):
        win.accumulate(np.int64(3), 0, 1, op=rma.SUM)
        ticket = np.zeros(1, np.int64)
        win.fetch_and_op(1, ticket, 0, 2)
        tickets.append(ticket)
    win.fence()
    everyone = sorted(int(t[0]) for ts in comm.allgather(tickets) for t in ts)
    assert everyone == list(range(rounds * comm.size))  # every fetched value distinct
    if comm.rank == 0:
        assert win.local[1] == 3 * rounds * comm.size
        assert win.local[2] == rounds * comm.size
    win.free()


@pytest.mark.rma(**EVERYWHERE)
def test_compare_and_swap_has_exactly_one_winner(comm):
    win = rma.Window.allocate(comm, 1, np.int32)
    win.local[0] = -1
    win.fence()
    seen = np.zeros(1, np.int32)
    win.compare_and_swap(comm.rank, -1, seen, 0)
    win.fence()
    outcomes = comm.allgather(int(seen[0]))
    winners = [r for r, s in enumerate(outcomes) if s == -1]
    assert len(winners) == 1
    final = comm.bcast(int(win.local[0]) if comm.rank == 0 else None)
    assert final == winners[0]
    assert all(s == final for r, s in enumerate(outcomes) if r != winners[0])
    win.free()


@pytest.mark.rma(**EVERYWHERE)
def test_proc_null_self_and_zero_size(comm):
    win = rma.Window.allocate(comm, 4, np.float64)
    win.fence()
    win.put(np.ones(4), rma.PROC_NULL)
    result = np.full(4, 5.0)
    win.get(result, rma.PROC_NULL)
    win.accumulate(np.ones(4), rma.PROC_NULL)
    win.put(np.arange(4.0), comm.rank)  # to itself
    win.put(np.zeros(0), (comm.rank + 1) % comm.size, 4)  # zero elements, at the very end
    win.fence()
    np.testing.assert_array_equal(win.local, np.arange(4.0))
    np.testing.assert_array_equal(result, 5.0)
    win.free()


@pytest.mark.rma(**EVERYWHERE)
def test_window_sizes_differ_per_rank(comm):
    win = rma.Window.allocate(comm, (comm.rank, 2), np.int16)  # rank 0 exposes nothing
    assert win.shape == (comm.rank, 2)
    assert [win.target_shape(r) for r in range(comm.size)] == [(r, 2) for r in range(comm.size)]
    win.fence()
    if comm.size > 1 and comm.rank == 0:  # one origin: puts from several to the same bytes would race
        last = comm.size - 1
        win.put(np.full((last, 2), comm.rank, np.int16), last)
        with pytest.raises(rma.TargetRangeError, match="to rank 0"):
            win.put(np.ones(1, np.int16), 0)
    win.fence()
    if comm.size > 1 and comm.rank == comm.size - 1:
        assert set(np.unique(win.local)) == {0}
    win.free()


@pytest.mark.rma(**EVERYWHERE)
def test_window_create_over_my_array_and_attributes(comm):
    mine = np.arange(6, dtype=np.float32).reshape(2, 3) * (comm.rank + 1)
    with rma.Window.create(comm, mine, info={"no_locks": True, "unknown": 1}) as win:
        assert win.local is mine or np.shares_memory(win.local, mine)
        assert (win.shape, win.dtype, win.nbytes, win.disp_unit) == ((2, 3), np.float32, 24, 4)
        assert win.model == "unified"
        assert win.info == {"no_locks": True, "no_check": False, "transport": expected_transport(comm)}
        assert win.comm is comm and win.group == comm.group
        win.fence()
        out = np.zeros(3, np.float32)
        win.get(out, (comm.rank + 1) % comm.size, target=np.s_[1])
        win.fence(rma.Mode.NOSUCCEED)
        np.testing.assert_array_equal(out, np.arange(3, 6) * ((comm.rank + 1) % comm.size + 1))
    with pytest.raises(rma.RMAError, match="freed"):
        win.put(np.zeros(1, np.float32), 0)
    with pytest.raises(rma.RMAError, match="freed"):
        _ = win.local


@pytest.mark.rma(**EVERYWHERE)
def test_disp_unit_and_raw_byte_windows(comm):
    raw = rma.Window.allocate(comm, 32, np.uint8, disp_unit=8)
    raw.fence()
    raw.put(np.array([1.5, 2.5]), comm.rank, 1)  # any dtype into a raw window; disp counts 8 bytes
    raw.fence()
    np.testing.assert_array_equal(raw.local[8:24].view(np.float64), [1.5, 2.5])
    back = np.zeros(2)
    raw.get(back, comm.rank, 1)
    raw.fence()
    np.testing.assert_array_equal(back, [1.5, 2.5])
    raw.free()


@pytest.mark.rma(**EVERYWHERE)
def test_structured_dtypes_travel_with_put_and_get(comm):
    record = np.dtype([("id", np.int32), ("score", np.float64)])
    win = rma.Window.allocate(comm, 4, record)
    data = np.array([(comm.rank, 0.5), (7, 1.5)], dtype=record)
    win.fence()
    win.put(data, comm.rank, 1)
    win.put(data[:1], comm.rank, target=np.s_[3:4])
    win.fence()
    assert win.local[1].tolist() == (comm.rank, 0.5) and win.local[3].tolist() == (comm.rank, 0.5)
    with pytest.raises(TypeError, match="REPLACE does not apply"):
        win.accumulate(data, comm.rank, op=rma.REPLACE)
    win.free()


@pytest.mark.rma(**EVERYWHERE)
def test_buffers_live_until_the_fence(comm):
    win = rma.Window.allocate(comm, 1000, np.float64)
    right = (comm.rank + 1) % comm.size
    win.fence()
    win.put(np.arange(990.0) * 2, right)  # a temporary nobody else holds
    win.get(np.zeros(10), right, 990)  # a result the caller drops at once (bytes the put leaves alone)
    gc.collect()
    garbage = [np.full(1000, 99.0) for _ in range(50)]  # reuse freed memory, if any
    win.fence()
    np.testing.assert_array_equal(win.local[:990], np.arange(990.0) * 2)
    del garbage
    win.free()


@pytest.mark.rma(**EVERYWHERE)
def test_fence_as_context_manager_and_modes(comm):
    win = rma.Window.allocate(comm, 4, np.int64)
    with win.fence(rma.Mode.NOPRECEDE):
        win.accumulate(np.ones(4, np.int64), 0)
    # The exit fenced with NOSUCCEED: no epoch is open now.
    with pytest.raises(rma.EpochError, match="no access epoch"):
        win.put(np.ones(4, np.int64), 0)
    if comm.rank == 0:
        np.testing.assert_array_equal(win.local, comm.size)
    win.fence()
    win.put(np.ones(4, np.int64), comm.rank)
    with pytest.raises(rma.EpochError, match="NOPRECEDE"):
        win.fence(rma.Mode.NOPRECEDE)
    win.fence(rma.Mode.NOSTORE | rma.Mode.NOPUT | rma.Mode.NOSUCCEED)
    # A fence followed by no call does not keep the window from being freed.
    win.fence()
    win.free()


@pytest.mark.rma(**EVERYWHERE)
def test_errors_are_raised_before_anything_moves(comm):
    win = rma.Window.allocate(comm, (3, 4), np.float64)
    with pytest.raises(rma.EpochError, match=r"win.put to rank 0 on rank \d+ of window \d+"):
        win.put(np.ones(2), 0)
    win.fence()
    with pytest.raises(rma.TargetRangeError, match="outside the target's window"):
        win.put(np.ones(3), 0, 10)
    with pytest.raises(IndexError):
        win.get(np.ones(1), 0, -1)
    with pytest.raises(rma.TargetRangeError):
        win.put(np.ones(4), 0, target=np.s_[5])
    with pytest.raises(TypeError, match="BAND does not apply to float64"):
        win.accumulate(np.ones(2), 0, op=rma.BAND)
    cwin = rma.Window.allocate(comm, 2, np.complex128)
    cwin.fence()
    with pytest.raises(TypeError, match="MAX does not apply to complex128"):
        cwin.accumulate(np.ones(2, np.complex128), 0, op=rma.MAX)
    with pytest.raises(TypeError, match="float32 does not match the target window's float64"):
        win.put(np.ones(4, np.float32), 0, target=np.s_[0])
    with pytest.raises(TypeError, match="origin dtype int64 does not match"):
        win.put(np.ones(4, np.int64), 0)
    with pytest.raises(ValueError, match="selects 4 elements"):
        win.put(np.ones(3), 0, target=np.s_[0])
    with pytest.raises(ValueError, match="exactly one element"):
        win.fetch_and_op(np.ones(2), np.zeros(2), 0)
    with pytest.raises(ValueError, match="exactly one element"):
        win.compare_and_swap(1, 1, np.zeros(2, np.float64), 0)
    frozen = np.zeros(2)
    frozen.flags.writeable = False
    with pytest.raises(ValueError, match="not writable"):
        win.get(frozen, 0)
    with pytest.raises(ValueError, match="not a rank of the window"):
        win.put(np.ones(1), comm.size)
    with pytest.raises(TypeError, match="basic NumPy index"):
        win.put(np.ones(2), 0, target=[0, 1])
    # Nothing above moved anything: the window is still all zeros everywhere.
    win.fence()
    assert not win.local.any()
    win.put(np.ones(1), comm.rank)
    with pytest.raises(rma.EpochError, match="free"):
        win.free()
    win.fence()
    win.free()
    cwin.fence(rma.Mode.NOSUCCEED)
    cwin.free()


def test_op_oracles_and_constants():
    from rma._native import _core

    assert rma.SUM is rma.Op.SUM and rma.PROC_NULL == _core.PROC_NULL
    np.testing.assert_array_equal(rma.MAX(np.array([1, 5]), np.array([3, 2])), [3, 5])
    assert (rma.Mode.NOPRECEDE | rma.Mode.NOSUCCEED).value == 24
    # Ops, modes and lock types are their own types, made by the core: none passes for another.
    assert not isinstance(rma.SUM, int) and not isinstance(rma.LOCK_SHARED, int)
    assert [op.value for op in rma.Op] == list(range(12))


@pytest.mark.rma(**EVERYWHERE)
def test_dynamic_window_attach_put_get_accumulate_detach(comm):
    win = rma.Window.create_dynamic(comm)
    assert win.disp_unit == 1 and win.nbytes == 0
    memory = np.zeros(8, np.float64)
    disp = win.attach(memory)
    displacements = comm.allgather(disp)
    right, left = (comm.rank + 1) % comm.size, (comm.rank - 1) % comm.size
    win.fence()
    win.put(np.arange(4.0) + comm.rank, right, displacements[right] + 8)  # bytes
    win.accumulate(np.ones(1), 0, displacements[0] + 56, op=rma.SUM)
    win.fence()
    np.testing.assert_array_equal(memory[1:5], np.arange(4.0) + left)
    if comm.rank == 0:
        assert memory[7] == comm.size
    back = np.zeros(4)
    win.get(back, right, displacements[right] + 8)
    win.fence()
    np.testing.assert_array_equal(back, np.arange(4.0) + comm.rank)
    # Outside the attached memory, or after detaching: refused before anything moves.
    with pytest.raises(rma.TargetRangeError, match="attached"):
        win.put(np.ones(2), right, displacements[right] + 56)
    with pytest.raises(TypeError, match="not target="):
        win.put(np.ones(2), right, target=np.s_[0:2])
    win.fence()
    win.detach(memory)
    with pytest.raises(ValueError, match="not attached"):
        win.detach(memory)
    win.fence()
    # The origin still believes the memory is there; the target refuses, and the origin hears
    # of it at its fence (after which the window works on).
    win.put(np.ones(1), right, displacements[right])
    with pytest.raises(rma.TargetRangeError, match="refused"):
        win.fence()
    # Attach something new: peers learn of it at their next access.
    fresh = np.full(3, 5, np.int32)
    spots = comm.allgather(win.attach(fresh))
    win.fence()
    got = np.zeros(3, np.int32)
    win.get(got, right, spots[right])
    win.fence(rma.Mode.NOSUCCEED)
    np.testing.assert_array_equal(got, [5, 5, 5])
    win.free()


@pytest.mark.rma(nprocs=[1, 2, 4])
def test_in_place_operators_work_on_win_local(comm):
    # `win.local += 1` assigns its in-place result back to the attribute: that is allowed, a
    # replacement is not (it would leave the window's memory behind).
    win = rma.Window.allocate(comm, 4, np.int64)
    win.local += 1
    win.local[1:3] *= 3
    np.testing.assert_array_equal(win.local, [1, 3, 3, 1])
    with pytest.raises(AttributeError, match="cannot be replaced"):
        win.local = np.zeros(4, np.int64)
    with pytest.raises(AttributeError, match="cannot be replaced"):
        win.local = win.local[:2]  # the same memory, not the same array
    np.testing.assert_array_equal(win.local, [1, 3, 3, 1])
    win.free()
