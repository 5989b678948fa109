"""One entrance per window call: the compiled window type (src/bindings/window_object.cpp).

Each call enters the C++ type once, whatever its arguments, and the core's rules check them.
These tests pin the defects the old two-entrance layer had (an error of fetch_and_op named
get_accumulate, a plain int passed as an op, a method of a temporary window, signatures that
inspect could not read) and the argument rules: a value of the wrong kind is a TypeError, a
value that does not fit a ValueError, on every path (shared memory, and libfabric in CI's
second pass).
"""

import inspect

import numpy as np
import pytest

import rma

EVERYWHERE = dict(nprocs=[1, 2, 3, 4], timeout=60)


@pytest.mark.rma(**EVERYWHERE)
def test_errors_of_fetch_and_op_name_fetch_and_op(comm):
    win = rma.Window.allocate(comm, 4, np.float64)
    peer = (comm.rank + 1) % comm.size
    result = np.zeros(1)
    with win.lock(peer):
        with pytest.raises(TypeError, match=r"win\.fetch_and_op\b"):
            win.fetch_and_op(1.0, result, peer, op=rma.BAND)  # BAND on float64
        with pytest.raises(rma.TargetRangeError, match=r"win\.fetch_and_op\b"):
            win.fetch_and_op(1.0, result, peer, 4)  # one past the end
        with pytest.raises(ValueError, match=r"win\.fetch_and_op\b"):
            win.fetch_and_op(np.ones(2), np.zeros(2), peer)
        with pytest.raises(rma.TargetRangeError, match=r"win\.rput\b"):
            win.rput(np.ones(2), peer, 3)
    comm.barrier()
    win.free()


@pytest.mark.rma(**EVERYWHERE)
def test_an_op_must_be_an_rma_op_on_every_path(comm):
    win = rma.Window.allocate(comm, 4, np.int64)
    peer = (comm.rank + 1) % comm.size
    one = np.ones(1, np.int64)
    with win.lock(peer):
        for op in (3, 1.0, True, np.float64(9.0), rma.Mode.NOCHECK, "SUM", None):
            with pytest.raises(TypeError, match="op must be an rma.Op"):
                win.accumulate(one, peer, 0, op)  # contiguous: the direct path on one host
            with pytest.raises(TypeError, match="op must be an rma.Op"):
                win.accumulate(one, peer, op=op, target=np.s_[1:2])  # a region: the general path
            with pytest.raises(TypeError, match="op must be an rma.Op"):
                win.fetch_and_op(one, one.copy(), peer, 0, op)
        win.flush(peer)
    comm.barrier()
    assert list(win.local) == [0, 0, 0, 0]  # nothing was applied
    comm.barrier()
    win.free()


@pytest.mark.rma(**EVERYWHERE)
def test_methods_of_a_window_held_by_nothing_else(comm):
    # The method keeps its window alive: no "the window of this method is gone".
    rma.Window.allocate(comm, 1, np.int64).fence()
    with rma.Window.allocate(comm, 1, np.int64).fence() as win:
        win.put(np.array([comm.rank], np.int64), (comm.rank + 1) % comm.size)
    assert win.local[0] == (comm.rank - 1) % comm.size
    put = rma.Window.allocate(comm, 2, np.int64).put  # a bound method outliving the name
    assert put.__self__.local.shape == (2,)


@pytest.mark.rma(nprocs=[1, 2], timeout=60)
def test_methods_have_signatures_and_docs(comm):
    win = rma.Window.allocate(comm, 4, np.float64)
    put = inspect.signature(win.put)
    assert list(put.parameters) == ["origin", "target_rank", "target_disp", "target"]
    assert put.parameters["target"].kind is inspect.Parameter.KEYWORD_ONLY
    assert put.parameters["target_disp"].default == 0
    assert inspect.signature(win.accumulate).parameters["op"].default is rma.SUM
    assert inspect.signature(win.lock).parameters["lock_type"].default is rma.LOCK_EXCLUSIVE
    assert str(inspect.signature(rma.Window.fence)) == "(self, /, mode=0)"
    for name in ("put", "get", "accumulate", "get_accumulate"):
        doc = getattr(rma.Window, name).__doc__
        assert "disp_unit" in doc and "target=" in doc and "Example" in doc, name
        assert getattr(win, name).__doc__ == doc
    assert inspect.signature(rma.Window.allocate).parameters["dtype"].default is np.uint8
    comm.barrier()
    win.free()


@pytest.mark.rma(**EVERYWHERE)
def test_arguments_of_the_wrong_kind_are_type_errors(comm):
    ints = rma.Window.allocate(comm, 4, np.int64)
    unsigned = rma.Window.allocate(comm, 2, np.uint64)
    floats = rma.Window.allocate(comm, 2, np.float64)
    raw = rma.Window.allocate(comm, 64, np.uint8)
    peer = (comm.rank + 1) % comm.size
    with ints.lock(peer), unsigned.lock(peer), floats.lock(peer), raw.lock(peer):
        for rank in (True, 1.0, rma.SUM, rma.LOCK_SHARED, "0"):
            with pytest.raises(TypeError, match="target_rank must be an integer"):
                ints.put(1, rank)
        with pytest.raises(TypeError, match="target_disp must be an integer"):
            ints.put(1, peer, True)
        for value in (1.9, "7", None, True, [1.5], [True]):
            with pytest.raises(TypeError):
                ints.put(value, peer)
        for value in (None, "7", True):
            with pytest.raises(TypeError):
                floats.put(value, peer)
        with pytest.raises(ValueError, match="does not fit"):
            unsigned.put(-1, peer)
        with pytest.raises(ValueError, match="does not fit"):
            unsigned.put(2**70, peer)
        with pytest.raises(ValueError, match="do not fit"):
            ints.put([2**70], peer)
        with pytest.raises(TypeError, match="result must be a NumPy array"):
            ints.fetch_and_op(1, None, peer)
        # dtypes that hold Python objects are refused by every window, raw ones included
        with pytest.raises(TypeError, match="Python objects"):
            raw.get(np.empty(1, object), peer)
        with pytest.raises(TypeError, match="Python objects"):
            raw.put(np.array([object()]), peer)
        for mode in (True, rma.SUM, 1.0):
            with pytest.raises(TypeError, match="mode must be"):
                ints.fence(mode)
        for lock_type in (1, 2.0, True, rma.Mode.NOCHECK):
            with pytest.raises(TypeError, match="lock_type"):
                ints.lock(peer, lock_type)
        with pytest.raises(TypeError):
            ints.lock(rma.LOCK_SHARED, peer)  # C's argument order: a lock type is no rank
        ints.put([1, 2], peer, 2)  # a list of ints into int64: fine
        floats.put(3, peer)  # an int into float64: exact, fine
        ints.flush(peer)
        floats.flush(peer)
    comm.barrier()
    assert list(ints.local[2:]) == [1, 2] and floats.local[0] == 3.0
    for win in (ints, unsigned, floats, raw):
        comm.barrier()
        win.free()


@pytest.mark.rma(nprocs=[1, 2], timeout=60)
def test_a_number_and_a_list_of_it_follow_one_rule(comm):
    # Which numbers a window's dtype takes is one rule of the core (elements/number_kinds.hpp):
    # a number is judged by it in C++, a list of numbers by its export in Python
    # (_core.ACCEPTED_NUMBER_KINDS). Both must refuse (TypeError) and take the same.
    from rma.ops import ELEMENT_DTYPES

    peer = (comm.rank + 1) % comm.size
    windows = [rma.Window.allocate(comm, 2, dtype) for dtype in ELEMENT_DTYPES]
    disagree = []
    for win in windows:
        with win.lock(peer):
            for number in (True, 1, 2**63, 2.5, 1j):
                refused = []
                for origin in (number, [number]):
                    try:
                        win.put(origin, peer)
                        win.flush(peer)  # (the next put writes the same bytes)
                        refused.append(False)
                    except TypeError:
                        refused.append(True)
                    except ValueError:  # of the kind taken, but too large (2**63 into int64)
                        refused.append(False)
                if refused[0] != refused[1]:
                    disagree.append(f"{number!r} into {win.dtype}: {'refused' if refused[0] else 'taken'} alone")
    assert not disagree, disagree
    # (And the rule is the documented one: a bool only into bool, an int into a float.)
    ints, floats = (windows[ELEMENT_DTYPES.index(np.dtype(t))] for t in (np.int64, np.float64))
    with floats.lock(peer), ints.lock(peer):
        floats.put([1, 2], peer)
        with pytest.raises(TypeError, match="a list of bool values is not a list of int64 values"):
            ints.put([True], peer)
    for win in windows:
        comm.barrier()
        win.free()


@pytest.mark.rma(**EVERYWHERE)
def test_proc_null_checks_arguments_like_any_call(comm):
    win = rma.Window.allocate(comm, 4, np.int64)
    with win.lock_all():
        win.put(np.ones(4, np.int64), rma.PROC_NULL)  # a no-op
        with pytest.raises(TypeError):
            win.put(None, rma.PROC_NULL)
        with pytest.raises(TypeError, match="Python objects"):
            win.put(np.array([object()]), rma.PROC_NULL)
        with pytest.raises(TypeError, match="target_disp must be an integer"):
            win.put(1, rma.PROC_NULL, "3")
        with pytest.raises(ValueError, match="selects"):
            win.put(np.ones(1000, np.int64), rma.PROC_NULL, target=np.s_[0:2])
        assert win._held_count() == 0
    comm.barrier()
    win.free()


@pytest.mark.rma(nprocs=[1, 2, 3], timeout=60)
def test_refused_calls_keep_nothing(comm):
    win = rma.Window.allocate(comm, 4, np.float64)
    for _ in range(1000):
        with pytest.raises(rma.EpochError):
            win.put(np.ones(2), 0)  # outside any epoch
    assert win._held_count() == 0
    comm.barrier()
    win.free()
