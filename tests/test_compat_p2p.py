"""Issue 40: the mpi4py facade's buffer point-to-point calls on real ranks (1 to 4): typed arrays
and derived datatypes sent as raw bytes (the count is the bytes, nothing pickled), synchronous
sends that wait for their receive, probes and matched probes, cancel of an unmatched receive,
persistent requests, Waitany/Waitsome, statuses."""

import numpy as np
import pytest

from processes import job_of

RANKS = dict(nprocs=[1, 2, 3, 4], transports=["shared-memory", "libfabric"], providers=["shm", "tcp"])


@pytest.mark.rma(**RANKS)
def test_send_recv_typed_arrays_as_raw_bytes(comm):
    from rma.compat import MPI

    world = MPI.COMM_WORLD
    rank, size = world.Get_rank(), world.Get_size()
    right, left = (rank + 1) % size, (rank - 1) % size
    for dtype in ("i", "d", "F", "b"):
        data = np.arange(1000, dtype=dtype) + rank
        got = np.full(1001, -1, dtype=dtype)
        status = MPI.Status()
        world.Sendrecv(data, right, 5, got, left, 5, status)
        assert (got[:1000] == np.arange(1000, dtype=dtype) + left).all() and got[1000] == -1
        # The count is the bytes sent: a pickle would be larger than nbytes.
        assert status.Get_count(MPI.BYTE) == data.nbytes
        assert (status.source, status.tag) == (left, 5)
        assert status.Get_count(MPI.Datatype.fromcode(dtype)) == 1000


@pytest.mark.rma(**RANKS)
def test_bare_arrays_take_the_short_way_with_the_same_rules(comm):
    """A bare C-contiguous array skips the parsing of a specification (buffers.message_bytes):
    what it refuses is refused all the same."""
    from rma.compat import MPI

    world = MPI.COMM_WORLD
    rank = world.Get_rank()
    grid = np.arange(12, dtype="i2").reshape(3, 4)
    got = np.zeros((3, 4), "i2")
    world.Sendrecv(grid, rank, 8, got, rank, 8)
    assert (got == grid).all()
    readonly = np.zeros(4, "i")
    readonly.flags.writeable = False
    world.Send(np.ones(4, "i"), rank, 9)
    with pytest.raises(MPI.Exception, match="read-only"):
        world.Recv(readonly, rank, 9)
    world.Recv(np.zeros(4, "i"), rank, 9)
    with pytest.raises(MPI.Exception):
        world.Send(np.array([object()]), rank, 10)  # (pointers: no message carries them)
    with pytest.raises(MPI.Exception, match="contiguous"):
        world.Send(np.arange(8, dtype="i")[::2], rank, 10)


@pytest.mark.rma(**RANKS)
def test_recv_into_a_derived_datatype_with_holes(comm):
    from rma.compat import MPI

    world = MPI.COMM_WORLD
    rank, size = world.Get_rank(), world.Get_size()
    every_other = MPI.INT.Create_vector(4, 1, 2).Commit()  # ints 0, 2, 4, 6
    world.Send(np.array([10, 11, 12, 13], "i"), (rank + 1) % size, 1)
    got = np.full(8, -1, "i")
    world.Recv([got, 1, every_other], (rank - 1) % size, 1)
    assert list(got) == [10, -1, 11, -1, 12, -1, 13, -1]
    # And from a derived datatype: its elements gathered in type-map order.
    world.Send([np.arange(8, dtype="i"), 1, every_other], (rank + 1) % size, 2)
    plain = np.zeros(4, "i")
    world.Recv(plain, (rank - 1) % size, 2)
    assert list(plain) == [0, 2, 4, 6]
    every_other.Free()


@pytest.mark.rma(**RANKS)
def test_a_message_too_large_for_the_buffer_is_err_truncate(comm):
    from rma.compat import MPI

    world = MPI.COMM_WORLD
    rank = world.Get_rank()
    world.Send(np.zeros(4, "i"), rank, 3)
    with pytest.raises(MPI.Exception) as error:
        world.Recv(np.zeros(2, "i"), rank, 3)
    assert error.value.Get_error_class() == MPI.ERR_TRUNCATE


@pytest.mark.rma(nprocs=[2, 3, 4], transports=["shared-memory", "libfabric"], providers=["shm", "tcp"])
def test_issend_completes_only_once_its_receive_matched(comm):
    import time

    from rma.compat import MPI

    world = MPI.COMM_WORLD
    rank, size = world.Get_rank(), world.Get_size()
    if rank == 0:
        request = world.Issend(np.arange(3, dtype="i"), 1, 9)
        deadline = time.monotonic() + 0.5
        while time.monotonic() < deadline:
            assert not request.Test()  # rank 1 has not received yet
            time.sleep(0.01)
        world.Send(np.zeros(1, "i"), 1, 10)  # "receive now"
        request.Wait()
        assert request == MPI.REQUEST_NULL
        world.ssend("object", 1, 11)  # the object form too: returns once rank 1 received it
    elif rank == 1:
        world.Recv(np.zeros(1, "i"), 0, 10)
        got = np.zeros(3, "i")
        world.Recv(got, 0, 9)
        assert list(got) == [0, 1, 2]
        assert world.recv(source=0, tag=11) == "object"
    world.Barrier()
    assert size >= 2


@pytest.mark.rma(**RANKS)
def test_probe_and_matched_probe(comm):
    from rma.compat import MPI

    world = MPI.COMM_WORLD
    rank, size = world.Get_rank(), world.Get_size()
    right, left = (rank + 1) % size, (rank - 1) % size
    assert not world.Iprobe(MPI.ANY_SOURCE, 77)
    world.Barrier()  # (every rank looked before any sends)
    world.Send(np.arange(5, dtype="d"), right, 77)
    world.Send(np.arange(2, dtype="d"), right, 78)
    status = MPI.Status()
    world.Probe(left, 77, status)
    assert (status.source, status.tag, status.Get_count(MPI.DOUBLE)) == (left, 77, 5)
    # Mprobe takes the tag-78 message out: a receive of any tag then gets the tag-77 one.
    message = world.Mprobe(left, 78, status)
    assert status.Get_count(MPI.DOUBLE) == 2
    first = np.zeros(5, "d")
    world.Recv(first, left, MPI.ANY_TAG, status)
    assert status.tag == 77 and list(first) == [0, 1, 2, 3, 4]
    second = np.zeros(2, "d")
    message.Recv(second)
    assert list(second) == [0, 1] and message == MPI.MESSAGE_NULL
    assert world.Improbe(left, 78) is None


@pytest.mark.rma(**RANKS)
def test_cancel_withdraws_an_unmatched_receive(comm):
    from rma.compat import MPI

    world = MPI.COMM_WORLD
    rank = world.Get_rank()
    buf = np.zeros(1, "i")
    request = world.Irecv(buf, rank, 4)
    request.Cancel()
    status = MPI.Status()
    request.Wait(status)
    assert status.Is_cancelled()
    # The message sent after goes to the next receive, not to the cancelled one.
    world.Send(np.array([42], "i"), rank, 4)
    world.Recv(buf, rank, 4)
    assert buf[0] == 42


@pytest.mark.rma(**RANKS)
def test_persistent_requests_are_reused(comm):
    from rma.compat import MPI

    world = MPI.COMM_WORLD
    rank, size = world.Get_rank(), world.Get_size()
    out, into = np.zeros(3, "i"), np.zeros(3, "i")
    send = world.Send_init(out, (rank + 1) % size, 6)
    recv = world.Recv_init(into, (rank - 1) % size, 6)
    for round_ in range(3):
        out[:] = round_ * 10 + rank
        MPI.Prequest.Startall([recv, send])
        MPI.Request.Waitall([send, recv])
        assert (into == round_ * 10 + (rank - 1) % size).all()
        assert send != MPI.REQUEST_NULL  # inactive, not freed
    send.Free()
    recv.Free()
    assert send == MPI.REQUEST_NULL


@pytest.mark.rma(**RANKS)
def test_waitany_and_waitsome_take_the_completed_ones(comm):
    from rma.compat import MPI

    world = MPI.COMM_WORLD
    rank = world.Get_rank()
    bufs = [np.zeros(1, "i") for _ in range(3)]
    requests = [world.Irecv(bufs[i], rank, 20 + i) for i in range(3)]
    world.Send(np.array([2], "i"), rank, 22)
    status = MPI.Status()
    assert MPI.Request.Waitany(requests, status) == 2 and status.tag == 22
    assert requests[2] == MPI.REQUEST_NULL and bufs[2][0] == 2
    world.Send(np.array([0], "i"), rank, 20)
    world.Send(np.array([1], "i"), rank, 21)
    done = []
    while len(done) < 2:
        done += MPI.Request.Waitsome(requests)
    assert sorted(done) == [0, 1] and [b[0] for b in bufs] == [0, 1, 2]
    assert MPI.Request.Waitsome(requests) is None


@pytest.mark.rma(**RANKS)
def test_proc_null_completes_at_once_with_its_status(comm):
    from rma.compat import MPI

    world = MPI.COMM_WORLD
    status = MPI.Status()
    world.Send(None, MPI.PROC_NULL)
    world.Ssend(None, MPI.PROC_NULL)
    world.Recv(None, MPI.PROC_NULL, 0, status)
    assert (status.source, status.tag, status.Get_count(MPI.BYTE)) == (MPI.PROC_NULL, MPI.ANY_TAG, 0)
    assert MPI.Status(status) == status


# Under RMA_CHECK, the facade's raw messages and synchronous object sends carry the sender's
# vector clock (message_clock.py): the Puts of ranks 0 and 1 below, to the same place, are ordered
# by messages only, so the checker reports nothing (without the clock it reports the
# two Puts as conflicting), and the ssend's object arrives as it was sent.
ORDERED_BY_MESSAGES = """
import numpy as np
from rma.compat import MPI
world = MPI.COMM_WORLD
rank = world.Get_rank()
win = MPI.Win.Allocate(16, 4, comm=world)
def put(value):
    win.Lock(0, MPI.LOCK_SHARED)
    win.Put(np.full(4, value, "i"), 0)
    win.Unlock(0)
reply = np.zeros(1, "i")
if rank == 0:  # a ping-pong: every Put of each rank ordered after the other's before it
    put(1)
    world.Send(np.zeros(2, "i"), 1, 0)
    world.Recv(reply, 1, 5)
    put(2)
    world.ssend("ordered", 1, 1)
    world.Recv(reply, 1, 5)
    put(3)
    world.Issend(np.zeros(1, "i"), 1, 2).Wait()
elif rank == 1:
    status = MPI.Status()
    world.Probe(0, 0, status)
    assert status.Get_count(MPI.INT) == 2, status.Get_count(MPI.BYTE)  # (the clock is not counted)
    world.Recv(np.zeros(2, "i"), 0, 0)
    put(11)
    world.Send(reply, 0, 5)
    assert world.recv(source=0, tag=1) == "ordered"
    put(12)
    world.Send(reply, 0, 5)
    message = world.Mprobe(0, 2, status)
    assert status.Get_count(MPI.INT) == 1
    message.Recv(np.zeros(1, "i"))
    put(13)
world.Barrier()
win.Free()
print("DONE")
"""


@pytest.mark.parametrize("size", [2, 3])
def test_messages_carry_the_clock_under_rma_check(size):
    from handmade_ranks import run_job

    results = run_job(ORDERED_BY_MESSAGES, size, {"RMA_CHECK": "1", "RMA_TIMEOUT": "20", "RMA_HANG_REPORT": "0"})
    for rank, (status, out, err) in enumerate(results):
        assert status == 0 and "DONE" in out, f"rank {rank}: {err}"
        assert "RMA_CHECK" not in err, f"rank {rank}: {err}"


# A synchronous send waits for its receive, so the death of the rank it waits for must end the
# wait (PeerError, as MPI.Exception), not leave it to the runtime's deadline.
SSEND_TO_A_RANK_THAT_DIES = """
import os, time
import numpy as np
from rma.compat import MPI
world = MPI.COMM_WORLD
world.Barrier()
if world.Get_rank() == 1:
    time.sleep(0.3)
    os._exit(0)  # without receiving
start = time.monotonic()
try:
    world.Ssend(np.zeros(4, "i"), 1, 0)
except MPI.Exception as error:
    print("RAISED", round(time.monotonic() - start), str(error).replace(chr(10), " "))
os._exit(0)
"""


def test_ssend_to_a_rank_that_dies_raises():
    from handmade_ranks import run_job

    results = run_job(SSEND_TO_A_RANK_THAT_DIES, 2, {"RMA_TIMEOUT": "30", "RMA_HANG_REPORT": "0"}, timeout=60)
    status, out, err = results[0]
    assert "RAISED" in out, f"rank 0: {out} {err}"
    seconds = int(out.split("RAISED ")[1].split()[0])
    assert seconds < 20, out  # ended by the death, long before RMA_TIMEOUT
    assert "rank 1" in out, out


def test_a_generalized_request_completes_when_the_program_says_so(monkeypatch):
    """MPI.Grequest: a thread of the program does the work and calls Complete(); Wait returns only
    then, with the status the query function fills, and the free function runs after it."""
    import threading

    from rma.compat import MPI

    done, calls = np.zeros(4), []

    def query(status, label):
        calls.append(("query", label))
        status.Set_source(3)
        status.Set_tag(7)

    greq = MPI.Grequest.Start(query, lambda label: calls.append(("free", label)), None, args=("job",))

    def work():
        done[:] = np.arange(4)
        greq.Complete()

    assert not greq.Test()
    worker = threading.Timer(0.2, work)
    worker.start()
    status = MPI.Status()
    greq.Wait(status)
    assert done.tolist() == [0, 1, 2, 3]  # (the work was done before Wait returned)
    assert (status.Get_source(), status.Get_tag()) == (3, 7)
    assert calls == [("query", "job"), ("free", "job")] and greq == MPI.REQUEST_NULL
    worker.join()
    # A query that raises fails the wait with its MPI class (ERR_OTHER for other exceptions).
    failing = MPI.Grequest.Start(lambda status: 1 / 0)
    failing.Complete()
    with pytest.raises(MPI.Exception, match="ZeroDivisionError") as raised:
        failing.Wait()
    assert raised.value.Get_error_class() == MPI.ERR_OTHER
    # Never completed: the wait ends at rma's deadline rather than hanging.
    monkeypatch.setenv("RMA_TIMEOUT", "0.3")
    with pytest.raises(MPI.Exception, match="Complete\\(\\) was not called within 0.3 s"):
        MPI.Grequest.Start().Wait()
    with pytest.raises(TypeError):
        MPI.Grequest(MPI.Prequest())


def test_request_null_cannot_be_freed_or_cancelled_and_attach_needs_a_writable_buffer():
    from rma.compat import MPI

    for call in (MPI.REQUEST_NULL.Free, MPI.REQUEST_NULL.Cancel):
        with pytest.raises(MPI.Exception) as null:
            call()
        assert null.value.Get_error_class() == MPI.ERR_REQUEST
    with pytest.raises(BufferError):
        MPI.Attach_buffer(MPI.buffer(b"abc"))
    mine = bytearray(16)
    MPI.Attach_buffer(mine)
    assert MPI.Detach_buffer() is mine


CANCEL_WHILE_WAITING = """
import threading, time, numpy as np
from rma.compat import MPI
c = MPI.COMM_WORLD
b = np.zeros(4)
r = c.Irecv(b, 0, 7)
out = []
def waiter():
    try:
        r.Wait()
        out.append("completed")
    except Exception as exc:
        out.append(type(exc).__name__)
t = threading.Thread(target=waiter)
t.start()
time.sleep(0.3)
r.Cancel()
t.join(30)
c.Send(np.ones(4), 0, 7)
c.Recv(b, 0, 7)
print(out, b.tolist())
"""


def test_a_receive_cancelled_while_another_thread_waits_for_it_stays_valid():
    """The waiting thread holds the receive while its GIL is released; Cancel() in another thread
    drops the request's own hold (a use after free before, seen under ASan): the withdrawn
    receive never fills, so that wait ends at the deadline, and the message goes to the next."""
    assert alone(CANCEL_WHILE_WAITING, RMA_TIMEOUT="2") == "['RMATimeoutError'] [1.0, 1.0, 1.0, 1.0]"


def alone(code: str, **env: str) -> str:
    """The last line a job of one rank running `code` prints, with `env` added."""
    run = job_of(code, 1, **env)
    assert run.returncode == 0, run.stderr
    return run.stdout.splitlines()[-1]


WAIT_FOR_NONE = """
import numpy as np
from rma.compat import MPI
c = MPI.COMM_WORLD
a, b = np.zeros(1), np.zeros(1)
requests = [c.Irecv(a, 0, 1), c.Irecv(b, 0, 2)]
ended = []
for wait in (MPI.Request.Waitany, MPI.Request.Waitsome):
    try:
        wait(requests)
    except Exception as exc:
        ended.append(str(exc))
print(ended)
"""


def test_waitany_and_waitsome_over_receives_that_never_match_end_at_the_deadline():
    # (Several requests are polled, not slept on in rma's wait: the deadline is the facade's.)
    ended = alone(WAIT_FOR_NONE, RMA_TIMEOUT="1")
    assert "Request.Waitany did not finish within 1 s" in ended and "Request.Waitsome did not finish" in ended
