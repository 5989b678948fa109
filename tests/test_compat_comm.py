"""Issue 40: communicators, groups, Info and errors of the mpi4py facade as mpi4py has them, on
real ranks (1 to 4, an odd count too): Create from a subgroup, Split's order by key, Compare,
Idup progressing while the program exchanges messages, attributes and their callbacks, Group
algebra and Translate_ranks, Info as a mapping, error classes and strings."""

import pickle

import pytest

from processes import job_of
from rma.compat import MPI

RANKS = dict(nprocs=[1, 2, 3, 4], timeout=60)


@pytest.mark.rma(**RANKS)
def test_create_from_a_subgroup_gives_its_members_in_group_order_and_comm_null_elsewhere(comm):
    from rma.compat import MPI

    world = MPI.COMM_WORLD
    rank, size = world.Get_rank(), world.Get_size()
    evens = list(range(0, size, 2))[::-1]  # the even ranks, last first
    group = world.Get_group().Incl(evens)
    made = world.Create(group)  # collective over the world: a split
    if rank in evens:
        assert made != MPI.COMM_NULL
        assert (made.Get_size(), made.Get_rank()) == (len(evens), evens.index(rank))
        assert made.allgather(rank) == evens  # messages travel in the new communicator, in its order
        assert MPI.Group.Compare(made.Get_group(), group) == MPI.IDENT
        assert world.Compare(made) == (MPI.CONGRUENT if size == 1 else MPI.UNEQUAL)
        made.Free()
        assert made == MPI.COMM_NULL
    else:
        assert made == MPI.COMM_NULL and not made
    # Create_group over the whole communicator, in reverse: every rank calls it.
    backwards = world.Create_group(world.Get_group().Incl(list(range(size))[::-1]))
    assert backwards.Get_rank() == size - 1 - rank
    assert world.Compare(backwards) == (MPI.CONGRUENT if size == 1 else MPI.SIMILAR)
    backwards.Free()
    if size > 1 and rank in evens:  # (a part of the ranks cannot agree on a context alone)
        with pytest.raises(MPI.NotCoveredError, match=f"Create_group of a group smaller.*rank {rank}"):
            world.Create_group(group)
    if size > 1:
        with pytest.raises(MPI.Exception, match="not in the communicator") as outside:
            MPI.COMM_SELF.Create(world.Get_group())  # world ranks that COMM_SELF does not have
        assert outside.value.Get_error_class() == MPI.ERR_GROUP
    world.Barrier()


@pytest.mark.rma(**RANKS)
def test_split_orders_by_key_and_compare_tells_ident_congruent_similar(comm):
    from rma.compat import MPI

    world = MPI.COMM_WORLD
    rank, size = world.Get_rank(), world.Get_size()
    parity = world.Split(rank % 2, key=-rank)  # a larger rank comes first
    same_parity = [r for r in range(size) if r % 2 == rank % 2]
    assert parity.allgather(rank) == same_parity[::-1]
    assert parity.Get_rank() == same_parity[::-1].index(rank)
    parity.Free()
    rest = world.Split(MPI.UNDEFINED if rank == 0 else 1)
    assert (rest == MPI.COMM_NULL) == (rank == 0)
    if rank:
        assert (rest.Get_size(), rest.Get_rank()) == (size - 1, rank - 1)
        rest.Free()
    assert world.Compare(world) == MPI.IDENT and world.Compare(MPI.Comm(world)) == MPI.IDENT
    dup = world.Dup()
    assert MPI.Comm.Compare(world, dup) == MPI.CONGRUENT
    reversed_order = world.Split(0, key=size - rank)
    assert world.Compare(reversed_order) == (MPI.CONGRUENT if size == 1 else MPI.SIMILAR)
    for made in (dup, reversed_order):
        made.Free()
    with pytest.raises(MPI.Exception) as null:
        MPI.COMM_NULL.Get_size()
    assert null.value.Get_error_class() == MPI.ERR_COMM
    with pytest.raises(MPI.Exception) as predefined:
        world.Free()
    assert predefined.value.Get_error_class() == MPI.ERR_COMM


@pytest.mark.rma(nprocs=[2, 3, 4], timeout=60)  # (a ring of one rank would receive before sending)
def test_idup_progresses_while_the_program_exchanges_messages(comm):
    from rma.compat import MPI

    world = MPI.COMM_WORLD
    rank, size = world.Get_rank(), world.Get_size()
    right, left = (rank + 1) % size, (rank - 1) % size
    # A token goes round the ring from rank 0, and rank 0 starts its Idup only once the token is
    # back: an Idup that blocked until every rank had started it would leave the others stuck
    # in it, before passing the token on.
    if rank == 0:
        world.send("token", dest=right, tag=7)
        assert world.recv(source=left, tag=7) == "token"
        made, request = world.Idup()
    else:
        made, request = world.Idup()
        world.send(world.recv(source=left, tag=7), dest=right, tag=7)
    request.Wait()
    assert world.Compare(made) == MPI.CONGRUENT
    assert made.allgather(rank) == list(range(size))
    made.Free()


@pytest.mark.rma(**RANKS)
def test_attributes_run_their_copy_and_delete_callbacks(comm):
    from rma.compat import MPI

    world = MPI.COMM_WORLD
    events = []

    def copy(comm, keyval, value):
        events.append(("copy", value))
        return value + 1

    def delete(comm, keyval, value):
        events.append(("delete", value))

    counted = MPI.Comm.Create_keyval(copy, delete)
    dropped = MPI.Comm.Create_keyval(lambda c, k, v: NotImplemented)
    kept = MPI.Comm.Create_keyval(True)
    base = world.Dup()
    base.Set_attr(counted, 10)
    base.Set_attr(dropped, "x")
    base.Set_attr(kept, ["same"])
    dup = base.Dup()
    assert events == [("copy", 10)]
    assert (dup.Get_attr(counted), dup.Get_attr(dropped), dup.Get_attr(kept)) == (11, None, ["same"])
    assert dup.Get_attr(kept) is base.Get_attr(kept)
    dup.Free()
    assert events[-1] == ("delete", 11)
    base.Set_attr(counted, 20)  # over 10: 10 goes through delete
    assert events[-1] == ("delete", 10)
    base.Delete_attr(counted)
    assert events[-1] == ("delete", 20) and base.Get_attr(counted) is None
    base.Free()
    for keyval in (counted, dropped, kept):
        assert MPI.Comm.Free_keyval(keyval) == MPI.KEYVAL_INVALID
    with pytest.raises(MPI.Exception) as freed:
        world.Set_attr(counted, 1)
    assert freed.value.Get_error_class() == MPI.ERR_KEYVAL

    # A callback that raises fails the call with ERR_OTHER, its traceback on stderr (mpi4py's way).
    def failing(comm, keyval, value):
        raise ValueError("no")

    bad = MPI.Comm.Create_keyval(None, failing)
    world.Set_attr(bad, 1)
    with pytest.raises(MPI.Exception, match="raised ValueError: no") as failed:
        world.Delete_attr(bad)
    assert failed.value.Get_error_class() == MPI.ERR_OTHER and world.Get_attr(bad) is None
    MPI.Comm.Free_keyval(bad)
    # MPI's own keyvals.
    assert world.Get_attr(MPI.TAG_UB) >= 32767  # (the least MPI allows)
    assert world.Get_attr(MPI.UNIVERSE_SIZE) == world.Get_size() and world.Get_attr(MPI.APPNUM) == 0
    assert world.Get_attr(MPI.IO) == MPI.ANY_SOURCE and world.Get_attr(MPI.WTIME_IS_GLOBAL) is True  # one host
    with pytest.raises(MPI.Exception) as invalid:
        world.Get_attr(MPI.KEYVAL_INVALID)
    assert invalid.value.Get_error_class() == MPI.ERR_KEYVAL
    with pytest.raises(MPI.Exception):
        world.Set_attr(MPI.TAG_UB, 5)
    errclass = MPI.Add_error_class()
    assert world.Get_attr(MPI.LASTUSEDCODE) == errclass >= MPI.ERR_LASTCODE


@pytest.mark.rma(**RANKS)
def test_windows_and_datatypes_hold_attributes_with_their_callbacks(comm):
    from rma.compat import MPI

    events = []
    keyval = MPI.Win.Create_keyval(None, lambda obj, k, value: events.append((type(obj).__name__, value)))
    win = MPI.Win.Allocate(8, 1, comm=MPI.COMM_WORLD)
    assert win.Get_attr(keyval) is None
    win.Set_attr(keyval, "a")
    win.Set_attr(keyval, "b")  # over "a": "a" goes through delete
    assert events == [("Win", "a")] and win.Get_attr(keyval) == "b"
    assert win.Get_attr(MPI.WIN_SIZE) == 8  # (MPI's own keyvals still answer)
    with pytest.raises(MPI.Exception) as own:
        win.Set_attr(MPI.WIN_SIZE, 1)
    assert own.value.Get_error_class() == MPI.ERR_KEYVAL
    with pytest.raises(MPI.Exception) as invalid:
        win.Get_attr(MPI.KEYVAL_INVALID)
    assert invalid.value.Get_error_class() == MPI.ERR_KEYVAL
    win.Free()  # runs the delete callback of what is left
    assert events == [("Win", "a"), ("Win", "b")]
    assert MPI.Win.Free_keyval(keyval) == MPI.KEYVAL_INVALID
    # WIN_NULL has no error handler; a window's ERRORS_RETURN handler returns for any code.
    for call, args in ((MPI.WIN_NULL.Get_errhandler, ()), (MPI.WIN_NULL.Set_errhandler, (MPI.ERRORS_RETURN,))):
        with pytest.raises(MPI.Exception) as null:
            call(*args)
        assert null.value.Get_error_class() == MPI.ERR_WIN
    win = MPI.Win.Create(MPI.BOTTOM, comm=MPI.COMM_WORLD)
    win.Call_errhandler(MPI.ERR_OTHER)
    win.Free()

    copied = MPI.Datatype.Create_keyval(lambda t, k, value: value * 2, lambda t, k, value: events.append(value))
    pair = MPI.INT.Create_contiguous(2)
    pair.Set_attr(copied, 21)
    assert MPI.Datatype(pair).Get_attr(copied) == 21  # (another object for the same type)
    twin = pair.Dup()
    assert twin.Get_attr(copied) == 42 and MPI.INT.Get_attr(copied) is None
    twin.Free()
    pair.Delete_attr(copied)
    assert events[-2:] == [42, 21]
    pair.Free()
    MPI.Datatype.Free_keyval(copied)
    with pytest.raises(MPI.Exception) as gone:
        MPI.INT.Get_attr(copied)
    assert gone.value.Get_error_class() == MPI.ERR_KEYVAL


@pytest.mark.rma(**RANKS)
def test_group_algebra_and_translate_ranks(comm):
    from rma.compat import MPI

    world = MPI.COMM_WORLD
    rank, size = world.Get_rank(), world.Get_size()
    everyone = world.Get_group()
    evens = everyone.Range_incl([(0, size - 1, 2)])
    odds = everyone.Range_excl([(0, size - 1, 2)])
    assert evens.Get_size() == (size + 1) // 2 and odds.Get_size() == size // 2
    assert evens.Get_rank() == (rank // 2 if rank % 2 == 0 else MPI.UNDEFINED)
    assert MPI.Group.Translate_ranks(evens, list(range(evens.Get_size())), everyone) == list(range(0, size, 2))
    translated = everyone.Translate_ranks(list(range(size)), evens)
    assert translated == [r // 2 if r % 2 == 0 else MPI.UNDEFINED for r in range(size)]
    assert everyone.Translate_ranks([MPI.PROC_NULL]) == [MPI.PROC_NULL]
    union = MPI.Group.Union(odds, evens)  # odds first, then evens
    assert union.Translate_ranks(group=everyone) == [*range(1, size, 2), *range(0, size, 2)]
    assert MPI.Group.Compare(union, everyone) == (MPI.IDENT if size == 1 else MPI.SIMILAR)
    assert MPI.Group.Compare(MPI.Group.Intersection(evens, odds), MPI.GROUP_EMPTY) == MPI.IDENT
    assert MPI.Group.Compare(MPI.Group.Difference(everyone, odds), evens) == MPI.IDENT
    assert everyone.Excl([0]).Translate_ranks(group=everyone) == list(range(1, size))
    backwards = everyone.Range_incl([(size - 1, 0, -1)])
    assert backwards.Translate_ranks(group=everyone) == list(range(size))[::-1]
    mine = MPI.COMM_SELF.Get_group()
    assert mine.Translate_ranks([0], everyone) == [rank]
    with pytest.raises(MPI.Exception) as null:
        MPI.GROUP_NULL.Compare(everyone)
    assert null.value.Get_error_class() == MPI.ERR_GROUP
    with pytest.raises(MPI.Exception):
        everyone.Range_incl([(0, size - 1, 0)])  # a stride of 0 names no rank
    with pytest.raises(ValueError, match="cannot serialize"):
        pickle.dumps(everyone)


def test_info_is_a_mapping_and_the_predefined_handles_pickle_as_themselves():
    info = MPI.Info.Create([("a", "1"), ("b", "2")])
    assert (info.keys(), info.values(), info.items()) == (["a", "b"], ["1", "2"], [("a", "1"), ("b", "2")])
    info.update({"c": 3}, d=True)
    assert info["c"] == "3" and info["d"] == "true" and len(info) == 4 and "d" in info
    assert info.pop("a") == "1" and info.pop("a", "gone") == "gone" and info.popitem() == ("d", "true")
    copy = pickle.loads(pickle.dumps(info))
    assert copy is not info and copy != info and copy.items() == info.items()
    assert MPI.Info(info) == info and info.Dup() != info
    with pytest.raises(KeyError):
        info["missing"]
    with pytest.raises(MPI.Exception) as nokey:
        info.Delete("missing")
    assert nokey.value.Get_error_class() == MPI.ERR_INFO_NOKEY
    with pytest.raises(MPI.Exception):
        info.Get_nthkey(len(info))
    with pytest.raises(TypeError):
        MPI.Info.Create(123)
    info.clear()
    assert len(info) == 0
    info.Free()
    assert info == MPI.INFO_NULL and not info
    null = MPI.INFO_NULL
    assert (len(null), null.keys(), null.get("k", "d"), null.pop("k", None)) == (0, [], "d", None)
    for write in (lambda: null.__setitem__("k", "v"), lambda: null.update([]), null.popitem):
        with pytest.raises(KeyError):
            write()
    assert MPI.INFO_ENV and MPI.INFO_ENV.Get("command")
    for handle in (MPI.INFO_NULL, MPI.INFO_ENV, MPI.GROUP_NULL, MPI.GROUP_EMPTY, MPI.COMM_NULL):
        assert pickle.loads(pickle.dumps(handle)) is handle
        copy = pickle.loads(pickle.dumps(type(handle)(handle)))
        assert copy is not handle and copy == handle


def test_error_classes_codes_and_strings():
    assert MPI.Get_error_class(MPI.ERR_RANK) == MPI.ERR_RANK and MPI.Get_error_string(MPI.ERR_RANK)
    errclass = MPI.Add_error_class()
    assert errclass > MPI.ERR_LASTCODE and MPI.Get_error_string(errclass) == ""
    code = MPI.Add_error_code(errclass)
    MPI.Add_error_string(code, "the program's own")
    assert MPI.Get_error_class(code) == errclass and MPI.Get_error_string(code) == "the program's own"
    error = MPI.Exception(code)
    assert (error.Get_error_class(), str(error), repr(error)) == (
        errclass,
        "the program's own",
        f"MPI.Exception({code})",
    )
    assert error == code and error > MPI.SUCCESS and int(error) == code and not MPI.Exception(MPI.SUCCESS)
    assert MPI.Exception(-5) == MPI.ERR_UNKNOWN
    with pytest.raises(MPI.Exception):
        MPI.Remove_error_class(errclass)  # it still has a code
    with pytest.raises(MPI.Exception):
        MPI.Remove_error_code(code)  # it still has a string
    MPI.Remove_error_string(code)
    MPI.Remove_error_code(code)
    MPI.Remove_error_class(errclass)
    with pytest.raises(MPI.Exception):
        MPI.Add_error_string(errclass, "gone")
    with pytest.raises(MPI.Exception) as null:
        MPI.ERRHANDLER_NULL.Free()
    assert null.value.Get_error_class() == MPI.ERR_ERRHANDLER


COPIES_OF_THE_PREDEFINED = """
import numpy as np
from rma.compat import MPI
mine = MPI.Comm(MPI.COMM_SELF)  # (a copy made before the first use of COMM_SELF)
world = MPI.Intracomm(MPI.COMM_WORLD)
mine.Send(np.ones(1), 0, 5)
print(MPI.COMM_SELF.Iprobe(0, 5), MPI.COMM_SELF.Compare(mine) == MPI.IDENT, world.Compare(MPI.COMM_WORLD) == MPI.IDENT)
"""


def test_copies_of_comm_self_and_comm_world_made_before_their_first_use_are_them():
    run = job_of(COPIES_OF_THE_PREDEFINED, 1)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["True", "True", "True"]
