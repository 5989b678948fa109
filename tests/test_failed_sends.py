"""Issue 13 ("Reliability"): a message that could not be sent must not hold back the messages
sent after it. Rank 1 is stopped (SIGSTOP) while rank 0 sends to it until a send finds no room
before RMA_TIMEOUT; once rank 1 runs again, the next message arrives after the earlier ones
(before the fix the failed send kept its sequence number, and rank 1, which takes messages in
order, waited for it for ever). dev.sh runs this file once more with RMA_TRANSPORT=libfabric.
Ranks are started by hand, as in test_dead_peers.py: the pytest plugin's ranks are not ours to
stop."""

import textwrap

from handmade_ranks import finish, start_ranks
from rma._job.store_server import StoreServer

PROLOGUE = """
import os, signal, sys, time
import rma
comm = rma.init()
"""

CODE = """
    flags = {flags!r}

    def wait_for(name):
        # (a plain sleep: a call of rma's would count the time rank 1 spends stopped)
        for _ in range(3000):
            if os.path.exists(os.path.join(flags, name)):
                return
            time.sleep(0.01)
        raise RuntimeError("no " + name)

    def raise_flag(name):
        open(os.path.join(flags, name), "w").close()

    pids = comm.allgather(os.getpid())
    if comm.rank == 1:
        raise_flag("idle")  # out of rma's calls from here until "drain"
        wait_for("drain")
        got = []
        while not got or got[-1][0] != "after":
            got.append(comm.recv(source=0, tag=5))
        sent = got[-1][1]
        assert [index for index, _ in got] == list(range(sent)) + ["after"], [index for index, _ in got]
        print("received", sent, "then the one after the refused one", flush=True)
    elif comm.rank == 0:
        wait_for("idle")
        os.kill(pids[1], signal.SIGSTOP)
        try:
            payload = bytes(48 * 1024)
            sent = 0
            try:
                while sent < 100000:
                    comm.send((sent, payload), dest=1, tag=5)
                    sent += 1
            except rma.RMATimeoutError as error:
                print("refused after", sent, ":", error, flush=True)
        finally:
            os.kill(pids[1], signal.SIGCONT)
        raise_flag("drain")
        comm.send(("after", sent), dest=1, tag=5)
    comm.barrier()
"""


def test_a_send_refused_at_its_deadline_does_not_hold_back_the_next_message(tmp_path):
    server = StoreServer(size=2)
    server.start()
    try:
        code = textwrap.dedent(CODE.format(flags=str(tmp_path)))
        processes = start_ranks(
            code, 2, server, prologue=PROLOGUE, extra_env={"RMA_TIMEOUT": "2"}, rank_variable="RMA_RANK"
        )
        (status0, out0, err0), (status1, out1, err1) = finish(processes, timeout=60)
    finally:
        server.close()
    assert status1 == 0, err1
    assert "then the one after the refused one" in out1, out1
    assert status0 == 0, err0
    assert "refused after" in out0 and "RMA_TIMEOUT" in out0, out0
    assert int(out0.split()[2]) > 0, out0  # some messages went before the refusal
