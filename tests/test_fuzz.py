"""Property-based fuzzing of every window call's arguments, in every epoch state.

Rank 0 makes thousands of calls with arguments drawn by hypothesis (right and wrong ranks,
displacements, origins of every dtype and shape, strided and object arrays, numbers, lists,
ops, modes, lock types, target= indexes) inside each kind of epoch (none, fence, lock,
lock_all, post/start), while rank 1 takes its part in the epochs. Every call must either work
or raise a documented exception (TypeError, ValueError, rma.EpochError, rma.TargetRangeError);
nothing may crash, hang, or leave the windows unusable: after each epoch both ranks check a
round trip. CI runs this at 2 ranks on both transports (the second pass of ./dev.sh test).
"""

import collections

import numpy as np
import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import rma

EPOCHS = ["none", "fence", "lock", "lock_all", "pscw"]
CALLS_PER_EPOCH = 1000  # 5 epoch kinds: 5,000 calls per transport
DOCUMENTED = (TypeError, ValueError, rma.EpochError, rma.TargetRangeError)
CONSTANTS = [rma.SUM, rma.REPLACE, rma.LOCK_SHARED, rma.LOCK_EXCLUSIVE, rma.Mode.NOCHECK, rma.Mode.NOPRECEDE]


def _readonly(array):
    array.flags.writeable = False
    return array


WRONG = st.one_of(
    st.none(),
    st.booleans(),
    st.floats(allow_nan=True),
    st.text(max_size=2),
    st.sampled_from(CONSTANTS),
    st.complex_numbers(max_magnitude=10),
)


def mostly(valid, wrong):
    """Draw from `valid` four times in five, else from `wrong`: calls get past the first check
    often enough to reach the epoch rules, the ranges and the data path."""
    return st.integers(0, 4).flatmap(lambda n: wrong if n == 0 else valid)


RANKS = mostly(
    st.sampled_from([0, 1, 1, rma.PROC_NULL]),
    st.one_of(st.integers(-4, 4), st.integers(2**31, 2**70), st.builds(np.int64, st.integers(-2, 3)), WRONG),
)
DISPS = mostly(st.integers(0, 8), st.one_of(st.integers(-3, 40), st.integers(2**40, 2**70), WRONG))
DTYPES = st.sampled_from(["i8", "f8", "u1", "i4", "?", "c16", "f4", "u8", ">i8", [("a", "i4"), ("b", "f4")]])
SMALL = hnp.array_shapes(min_dims=0, max_dims=2, min_side=0, max_side=5)
ANY_ARRAY = hnp.arrays(dtype=DTYPES, shape=SMALL)
INT64 = hnp.arrays(dtype="i8", shape=st.integers(1, 4))
ORIGINS = mostly(
    st.one_of(
        INT64,
        INT64.map(lambda array: array[::2]),
        st.integers(-5, 5),
        st.lists(st.integers(-5, 5), min_size=1, max_size=4),
    ),
    st.one_of(
        ANY_ARRAY,
        ANY_ARRAY.map(lambda array: array[::2] if array.ndim else array),  # strided views
        st.builds(lambda n: np.array([object()] * n, dtype=object), st.integers(0, 3)),
        st.builds(lambda n: np.zeros(n, "V3"), st.integers(0, 3)),  # raw bytes of an odd size
        st.integers(-(2**70), 2**70),
        st.lists(st.one_of(st.integers(-(2**65), 2**65), st.floats(), st.booleans()), max_size=5),
        st.builds(np.float32, st.floats(width=32)),
        WRONG,
    ),
)
RESULTS = mostly(
    st.one_of(INT64, INT64.map(lambda array: array[::2])),
    st.one_of(ANY_ARRAY, ANY_ARRAY.map(lambda array: _readonly(array)), WRONG),
)
# fetch_and_op and compare_and_swap take one element: mostly one, sometimes anything.
ONE_ORIGIN = mostly(st.one_of(hnp.arrays(dtype="i8", shape=1), st.integers(-5, 5)), ORIGINS)
ONE_RESULT = mostly(hnp.arrays(dtype="i8", shape=1), RESULTS)
OPS = mostly(st.sampled_from(list(rma.Op)), st.one_of(st.integers(0, 12), WRONG))
TARGETS = mostly(
    st.none(),
    st.one_of(
        st.builds(
            slice, st.none() | st.integers(-40, 40), st.none() | st.integers(-40, 40), st.sampled_from([None, 1, 2, -1])
        ),
        st.integers(-40, 40),
        st.sampled_from([Ellipsis, (0,), (slice(None), None), (1, 2)]),
        WRONG,
    ),
)
FLUSH_CALLS = ["flush", "flush_local", "flush_all", "flush_local_all", "sync"]


@st.composite
def window_calls(draw):
    """One call: (method name, positional arguments, keyword arguments)."""
    name = draw(
        st.sampled_from(
            ["put", "get", "accumulate", "get_accumulate", "fetch_and_op", "compare_and_swap"]
            + ["rput", "rget", "raccumulate", "rget_accumulate"]
            + FLUSH_CALLS
        )
    )
    rank, disp = draw(RANKS), draw(DISPS)
    if name in ("flush", "flush_local"):
        return name, (rank,), {}
    if name in FLUSH_CALLS:
        return name, (), {}
    keywords = {}
    if name not in ("fetch_and_op", "compare_and_swap") and draw(st.booleans()):
        keywords["target"] = draw(TARGETS)
    if name in ("put", "rput"):
        return name, (draw(ORIGINS), rank, disp), keywords
    if name in ("get", "rget"):
        return name, (draw(RESULTS), rank, disp), keywords
    if name in ("accumulate", "raccumulate"):
        return name, (draw(ORIGINS), rank, disp, draw(OPS)), keywords
    if name == "compare_and_swap":
        return name, (draw(ONE_ORIGIN), draw(ONE_ORIGIN), draw(ONE_RESULT), rank, disp), keywords
    if name == "fetch_and_op":
        return name, (draw(ONE_ORIGIN), draw(ONE_RESULT), rank, disp, draw(OPS)), keywords
    return name, (draw(ORIGINS), draw(RESULTS), rank, disp, draw(OPS)), keywords


def _fuzz(windows, epoch, outcomes):
    @settings(
        max_examples=CALLS_PER_EPOCH,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @seed(EPOCHS.index(epoch))  # the same calls in every run, other calls in each epoch
    @given(st.sampled_from(range(len(windows))), window_calls())
    def one_call(which, call):
        name, args, keywords = call
        try:
            result = getattr(windows[which], name)(*args, **keywords)
        except DOCUMENTED as error:
            outcomes[(epoch, name, type(error).__name__)] += 1
            return
        outcomes[(epoch, name, "done")] += 1
        if isinstance(result, rma.Request):
            result.test()

    one_call()


def _round_trip(comm, windows):
    """Both ranks: every window still works (a fence epoch moves data both ways)."""
    peer = (comm.rank + 1) % comm.size
    for win in windows:
        stamp = np.full(1, 100 + comm.rank, win.dtype)
        with win.fence():
            win.put(stamp, peer, 3)
        assert win.local[3] == 100 + (comm.rank - 1) % comm.size


@pytest.mark.racy  # (random calls in one epoch overlap: an erroneous program, by design)
@pytest.mark.rma(nprocs=[2], timeout=300)
def test_fuzzed_calls_raise_only_documented_errors(comm):
    windows = [rma.Window.allocate(comm, 32, np.int64), rma.Window.allocate(comm, 256, np.uint8)]
    fuzzing = comm.rank == 0
    outcomes = collections.Counter()
    epochs = EPOCHS
    for epoch in epochs:
        if epoch == "fence":
            for win in windows:
                win.fence()
        elif epoch == "lock" and fuzzing:
            for win in windows:
                win.lock(1)
        elif epoch == "lock_all" and fuzzing:
            for win in windows:
                win.lock_all()
        elif epoch == "pscw":
            for win in windows:
                (win.start if fuzzing else win.post)([1 - comm.rank])
        if fuzzing:
            _fuzz(windows, epoch, outcomes)
        for win in windows:
            if epoch == "fence":
                win.fence(rma.Mode.NOSUCCEED)
            elif epoch == "lock" and fuzzing:
                win.unlock(1)
            elif epoch == "lock_all" and fuzzing:
                win.unlock_all()
            elif epoch == "pscw":
                (win.complete if fuzzing else win.wait)()
        comm.barrier()
        _round_trip(comm, windows)
    for win in windows:
        comm.barrier()
        win.free()
    if fuzzing:
        print(sorted(outcomes.items()))  # shown when the test fails
        assert sum(outcomes.values()) >= len(epochs) * CALLS_PER_EPOCH
        # The fuzzing reaches past the argument checks: calls that move data did, in each
        # epoch that allows them, and calls outside any epoch were refused by the epoch rules.
        for epoch in ("fence", "lock", "lock_all", "pscw"):
            for name in ("put", "get", "accumulate", "fetch_and_op"):
                assert outcomes[(epoch, name, "done")] > 0, (epoch, name)
        assert outcomes[("none", "put", "EpochError")] > 0
        assert not any(outcomes[("none", name, "done")] for name in ("put", "get", "accumulate"))
