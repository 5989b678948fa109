"""Test the rendezvous store (rma._job.store_*) with real sockets, threads and processes.

Every blocking call here has a timeout, so a bug makes a test fail, not hang (pytest-timeout
is not a dependency).
"""

import os
import resource
import selectors
import socket
import subprocess
import sys
import textwrap
import threading
import time
from contextlib import contextmanager

import pytest

from rma._job.frames import Channel
from rma._job.store_client import StoreClient
from rma._job.store_protocol import MAX_VALUE_SIZE, parse_address
from rma._job.store_server import StoreServer
from rma.errors import BootstrapError, PeerError, RMATimeoutError

# Upper bound for any single wait in this file.
WAIT = 10.0


@pytest.fixture
def server():
    """Yield a running store for 4 ranks, with a record of on_rank_exit calls."""
    exits = []
    exited = threading.Event()

    def on_rank_exit(rank, clean):
        exits.append((rank, clean))
        exited.set()

    srv = StoreServer(4, on_rank_exit=on_rank_exit)
    srv.exits = exits
    srv.exited = exited
    srv.start()
    yield srv
    srv.close()


@pytest.fixture
def clients(server):
    """Return a factory of connected clients that are all closed after the test."""
    made = []

    def connect(rank, **kwargs):
        client = StoreClient(server.address, server.secret, rank, **kwargs)
        made.append(client)
        return client

    yield connect
    for client in made:
        client.close()


def run_client(server, rank, body, timeout=WAIT):
    """Run `body` in a fresh Python process holding a StoreClient named `client`."""
    code = textwrap.dedent(
        """
        import os, sys
        from rma._job.store_client import StoreClient
        client = StoreClient(os.environ["STORE"], os.environ["SECRET"], int(os.environ["RANK"]), timeout=10)
        """
    ) + textwrap.dedent(body)
    env = dict(os.environ, STORE=server.address, SECRET=server.secret, RANK=str(rank))
    return subprocess.Popen(
        [sys.executable, "-c", code],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def finish(proc, timeout=WAIT):
    """Wait for a process started by run_client; return (returncode, stdout, stderr)."""
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise
    return proc.returncode, out.decode(), err.decode()


def test_put_get_in_one_process(clients):
    a, b = clients(0), clients(1)
    a.put("k", b"value")
    assert b.get("k") == b"value"
    a.put("k", b"replaced")
    assert b.get("k", timeout=1) == b"replaced"
    assert a.size == 4


def test_get_blocks_until_another_rank_puts(clients):
    a, b = clients(0), clients(1)
    threading.Timer(0.2, b.put, args=("late", b"\x00\xffbinary")).start()
    start = time.monotonic()
    assert a.get("late", timeout=WAIT) == b"\x00\xffbinary"
    assert time.monotonic() - start >= 0.15


def test_get_many_waits_for_all_keys(clients):
    a, b, c = clients(0), clients(1), clients(2)
    a.put("addr/0", b"zero")
    result = []
    keys = ["addr/0", "addr/1", "addr/2"]
    t = threading.Thread(target=lambda: result.append(c.get_many(keys, timeout=WAIT)))
    t.start()
    time.sleep(0.1)
    assert not result  # addr/1 and addr/2 are still missing
    b.put("addr/1", b"one")
    time.sleep(0.1)
    assert not result
    c.put("addr/2", b"two")
    t.join(WAIT)
    assert result == [[b"zero", b"one", b"two"]]
    assert c.get_many([]) == []


def test_exchange_between_processes(server):
    body = """
        rank = int(os.environ["RANK"])
        client.put(f"addr/{rank}", f"endpoint-of-{rank}".encode())
        values = client.get_many([f"addr/{r}" for r in range(4)])
        print(",".join(v.decode() for v in values))
        client.close()
        """
    procs = [run_client(server, rank, body) for rank in range(4)]
    for proc in procs:
        rc, out, err = finish(proc)
        assert rc == 0, err
        assert out.strip() == ",".join(f"endpoint-of-{r}" for r in range(4))
    deadline = time.monotonic() + WAIT
    while len(server.exits) < 4 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert server.ranks_finished() == {0, 1, 2, 3}
    assert server.ranks_dead() == set()
    assert sorted(server.exits) == [(r, True) for r in range(4)]


def test_requests_from_several_threads(clients):
    # A get blocked in one thread must not hold up puts from other threads
    # of the same client.
    a = clients(0)
    b = clients(1)
    results = {}

    def getter(i):
        results[i] = a.get(f"t/{i}", timeout=WAIT)

    threads = [threading.Thread(target=getter, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    putters = [threading.Thread(target=a.put, args=(f"t/{i}", bytes([i]) * 100)) for i in range(0, 8, 2)]
    putters += [threading.Thread(target=b.put, args=(f"t/{i}", bytes([i]) * 100)) for i in range(1, 8, 2)]
    for t in putters:
        t.start()
    for t in threads + putters:
        t.join(WAIT)
    assert results == {i: bytes([i]) * 100 for i in range(8)}


def test_large_value(clients):
    a, b = clients(0), clients(1)
    big = os.urandom(MAX_VALUE_SIZE)
    a.put("big", big)
    assert b.get("big", timeout=WAIT) == big
    with pytest.raises(ValueError):
        a.put("too-big", b"x" * (MAX_VALUE_SIZE + 1))


def test_no_timeout(clients, server):
    # timeout=None (RMA_TIMEOUT=0) means blocking calls wait as long as it takes.
    a = clients(0, timeout=None)
    threading.Timer(0.2, clients(1).put, args=("slow", b"v")).start()
    assert a.get("slow") == b"v"


def test_get_timeout(clients):
    a = clients(0, timeout=0.3)
    start = time.monotonic()
    with pytest.raises(RMATimeoutError, match="never-put"):
        a.get("never-put", timeout=0.2)
    assert 0.15 <= time.monotonic() - start < 2
    # The client default applies when no timeout is given.
    with pytest.raises(RMATimeoutError):
        a.get_many(["never-put", "neither"])
    # A timed-out get leaves the client usable, and a late value does not
    # confuse later requests.
    a.put("never-put", b"now")
    assert a.get("never-put") == b"now"


def test_wrong_secret_refused(server):
    with pytest.raises(BootstrapError) as info:
        StoreClient(server.address, "not-the-secret", 2, timeout=WAIT)
    message = str(info.value)
    assert "refused rank 2" in message
    assert "wrong job secret (RMA_SECRET)" in message
    assert server.address in message
    assert "\n" not in message
    assert server.ranks_connected() == set()


@pytest.mark.parametrize("rank", [-1, 4, 100])
def test_rank_out_of_range_refused(server, rank):
    with pytest.raises(BootstrapError, match="out of range"):
        StoreClient(server.address, server.secret, rank, timeout=WAIT)


def test_duplicate_rank_refused(clients, server):
    clients(1)
    with pytest.raises(BootstrapError, match="already joined"):
        StoreClient(server.address, server.secret, 1, timeout=WAIT)
    assert server.ranks_connected() == {1}


def test_unreachable_store():
    # Find a port nobody listens on by binding and closing a server.
    srv = StoreServer(1)
    address = srv.address
    srv.close()
    start = time.monotonic()
    with pytest.raises(BootstrapError, match="cannot reach the rendezvous store"):
        StoreClient(address, "x", 0, timeout=0.3)
    assert time.monotonic() - start < 3


def test_malformed_address():
    with pytest.raises(BootstrapError, match="malformed"):
        StoreClient("no-port-here", "x", 0, timeout=1)
    assert parse_address("[::1]:80") == ("::1", 80)
    assert parse_address("node7:1234") == ("node7", 1234)


def test_client_connects_while_store_starts_late():
    srv = StoreServer(1)
    host, port = parse_address(srv.address)
    secret = srv.secret
    srv.close()
    late = StoreServer(1, secret=secret, host=host, port=port)
    threading.Timer(0.2, late.start).start()
    try:
        client = StoreClient(f"{host}:{port}", secret, 0, timeout=WAIT)
        client.close()
    finally:
        time.sleep(0.05)
        late.close()


def test_dead_notice_when_a_rank_process_dies(server, clients):
    notices = []
    got = threading.Event()
    watcher = clients(0)
    watcher.on_peer_dead(lambda rank: (notices.append(rank), got.set()))
    proc = run_client(server, 3, "client.put('x', b'1')\nos._exit(5)\n")
    assert finish(proc)[0] == 5
    assert got.wait(WAIT)
    assert notices == [3]
    assert server.ranks_dead() == {3}
    assert server.exited.wait(WAIT)
    assert (3, False) in server.exits
    # A rank that joins after the death is told about it too, and a
    # callback registered late gets the deaths it missed.
    late = clients(1)
    deadline = time.monotonic() + WAIT
    while not late.dead_ranks() and time.monotonic() < deadline:
        time.sleep(0.01)
    replay = []
    late.on_peer_dead(replay.append)
    assert replay == [3]
    # The dead rank cannot come back under the same rank number.
    with pytest.raises(BootstrapError, match="already left"):
        StoreClient(server.address, server.secret, 3, timeout=WAIT)


def test_no_dead_notice_on_clean_close(server, clients):
    notices = []
    watcher = clients(0)
    watcher.on_peer_dead(notices.append)
    proc = run_client(server, 2, "client.put('x', b'1')\nclient.close()\n")
    rc, _, err = finish(proc)
    assert rc == 0, err
    assert server.exited.wait(WAIT)
    assert server.exits == [(2, True)]
    assert server.ranks_finished() == {2}
    assert server.ranks_dead() == set()
    time.sleep(0.2)  # a notice, if wrongly sent, would arrive by now
    assert notices == []


def test_unclean_close_is_a_death(server, clients):
    notices = []
    got = threading.Event()
    watcher = clients(0)
    watcher.on_peer_dead(lambda rank: (notices.append(rank), got.set()))
    other = clients(1)
    other.close(clean=False)
    other.close()  # idempotent
    assert got.wait(WAIT)
    assert notices == [1]
    assert server.ranks_dead() == {1}


def test_deaths_come_in_the_order_the_store_learned_them(server, clients):
    # (rmarun's summary names the first: a rank that fails on the news of another's death comes
    # after it, whenever its own process ends.) A rank that finished is no death.
    watcher = clients(0)
    heard = []
    watcher.on_peer_dead(heard.append)
    clients(3).close()
    for rank in (2, 1):
        clients(rank).close(clean=False)
        deadline = time.monotonic() + WAIT
        while rank not in heard and time.monotonic() < deadline:
            time.sleep(0.01)
    assert heard == [2, 1]
    assert server.deaths() == [(2, False), (1, False)]


def test_store_loss_reported_as_minus_one(server):
    client = StoreClient(server.address, server.secret, 0, timeout=WAIT)
    notices = []
    got = threading.Event()
    client.on_peer_dead(lambda rank: (notices.append(rank), got.set()))
    blocked = []

    def wait_forever():
        try:
            client.get("never", timeout=WAIT)
        except PeerError as exc:
            blocked.append(exc)

    t = threading.Thread(target=wait_forever)
    t.start()
    time.sleep(0.1)
    server.close()
    assert got.wait(WAIT)
    assert notices == [-1]
    t.join(WAIT)
    # A request waiting when the store vanished fails at once with PeerError.
    assert len(blocked) == 1 and "lost its connection" in str(blocked[0])
    with pytest.raises(PeerError):
        client.put("k", b"v")
    client.close()  # must not raise or hang after the loss
    # Shutting the store down is not a death of the ranks.
    assert server.ranks_dead() == set()
    assert server.exits == []


def test_no_minus_one_after_close(server):
    client = StoreClient(server.address, server.secret, 0, timeout=WAIT)
    notices = []
    client.on_peer_dead(notices.append)
    client.close()
    server.close()
    time.sleep(0.1)
    assert notices == []


def test_server_close_is_idempotent_and_context_managers():
    with StoreServer(2) as srv:
        with StoreClient(srv.address, srv.secret, 0, timeout=WAIT) as client:
            client.put("a", b"b")
            assert srv.ranks_connected() == {0}
    srv.close()
    assert srv.ranks_finished() == {0}
    with pytest.raises(ValueError):
        StoreServer(0)


# -- a store that cannot be starved by connections that never say hello -------------------

STORE_PROCESS = """
import resource, sys
from rma._job.store_server import StoreServer
if int(sys.argv[1]):
    resource.setrlimit(resource.RLIMIT_NOFILE, (int(sys.argv[1]), resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
server = StoreServer(4, secret="s")
server.start()
print(server.address, flush=True)
sys.stdin.read()  # until the test closes stdin
server.close()
"""


@contextmanager
def store_process(nofile=0):
    """Run a store for 4 ranks (secret "s") in its own process, limited to `nofile` descriptors."""
    proc = subprocess.Popen(
        [sys.executable, "-c", STORE_PROCESS, str(nofile)], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    try:
        proc.address = proc.stdout.readline().decode().strip()
        assert proc.address, "the store process did not start"
        yield proc
    finally:
        proc.stdin.close()
        try:
            proc.wait(WAIT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        proc.stdout.close()


def cpu_seconds(pid):
    """Return the user + system CPU time a process has used."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def thread_count(pid):
    return len(os.listdir(f"/proc/{pid}/task"))


@contextmanager
def idle_connections(address, n):
    """Open `n` connections that never send anything; close them all on exit."""
    host, port = parse_address(address)
    socks = []
    sel = selectors.DefaultSelector()
    try:
        # In batches, each waited for: a connection the listen backlog has no room for yet
        # is retried by the kernel seconds later.
        for start in range(0, n, 100):
            batch = []
            for _ in range(min(100, n - start)):
                sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                socks.append(sock)
                sock.setblocking(False)
                sock.connect_ex((host, port))
                batch.append(sock)
                sel.register(sock, selectors.EVENT_WRITE)
            deadline = time.monotonic() + 2.0
            while sel.get_map() and time.monotonic() < deadline:
                for key, _ in sel.select(0.1):
                    sel.unregister(key.fileobj)
            for sock in batch:
                if sock in sel.get_map():
                    sel.unregister(sock)
        yield socks
    finally:
        sel.close()
        for sock in socks:
            sock.close()


def join_job(address, secret="s", size=4):
    """Join as every rank of a job from threads, exchange a key each; return the seconds it took."""
    start = time.monotonic()
    errors = []

    def rank(r):
        try:
            with StoreClient(address, secret, r, timeout=WAIT) as client:
                client.put(f"addr/{r}", str(r).encode())
                assert client.get_many([f"addr/{q}" for q in range(size)]) == [str(q).encode() for q in range(size)]
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=rank, args=(r,)) for r in range(size)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(2 * WAIT)
    assert not errors, errors
    assert not any(t.is_alive() for t in threads)
    return time.monotonic() - start


@pytest.fixture
def many_files():
    """Raise this process's descriptor limit to its hard limit (store processes inherit it)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 6000:
        pytest.skip(f"needs 6000 file descriptors, the hard limit (ulimit -Hn) is {hard}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    yield
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_job_joins_past_5000_idle_connections(many_files):
    from rma._job.store_gate import MAX_WAITING

    # 1024 descriptors: the usual default soft limit of the store's process (rmarun).
    with store_process(nofile=1024) as store, idle_connections(store.address, 5000) as idle:
        threads = thread_count(store.pid)
        seconds = join_job(store.address)
        print(f"joined in {seconds:.2f} s past 5000 idle connections; store threads {threads}")
        assert seconds < 5.0
        # The oldest idle connections were closed to keep MAX_WAITING at most.
        assert threads < 10
        idle[0].setblocking(True)
        idle[0].settimeout(WAIT)
        assert idle[0].recv(1) == b""
        assert MAX_WAITING < 5000


def test_out_of_descriptors_does_not_spin(many_files):
    with store_process(nofile=256) as store:
        with idle_connections(store.address, 400):
            time.sleep(0.5)  # the store runs out of descriptors
            before = cpu_seconds(store.pid)
            time.sleep(2.0)
            used = cpu_seconds(store.pid) - before
            print(f"store CPU while out of descriptors: {used / 2.0:.1%} of a core")
            assert used < 0.1  # under 5% of a core
        # Once the idle connections are gone, a job joins at once.
        seconds = join_job(store.address)
        print(f"then joined in {seconds:.2f} s")
        assert seconds < 5.0


def test_idle_connection_closed_after_hello_deadline(server):
    from rma._job.store_gate import HELLO_DEADLINE

    host, port = parse_address(server.address)
    with socket.create_connection((host, port), timeout=WAIT) as sock:
        sock.settimeout(HELLO_DEADLINE + WAIT)
        start = time.monotonic()
        assert sock.recv(1) == b""
        elapsed = time.monotonic() - start
    assert HELLO_DEADLINE - 0.5 <= elapsed < HELLO_DEADLINE + 2.0
    assert HELLO_DEADLINE <= 10.0  # "a few seconds"
    # The store still serves ranks.
    with StoreClient(server.address, server.secret, 0, timeout=WAIT) as client:
        client.put("k", b"v")


def test_store_threads_do_not_grow_with_idle_connections():
    with store_process() as store:
        before = thread_count(store.pid)
        with idle_connections(store.address, 500):
            time.sleep(0.5)
            during = thread_count(store.pid)
        print(f"store threads: {before} before, {during} with 500 idle connections")
        assert during <= before


@pytest.mark.parametrize("value", ["soon", "-1"])
def test_a_bad_link_timeout_is_refused_before_anything_listens(monkeypatch, value):
    monkeypatch.setenv("RMA_LINK_TIMEOUT", value)
    with pytest.raises(BootstrapError, match=f"RMA_LINK_TIMEOUT='{value}'"):
        StoreServer(2)


def test_a_death_notice_queued_when_the_store_closes_still_goes_out(monkeypatch):
    # Rank 0 of a PMIx job serves the watch of the ranks and ends as soon as it hears of a death
    # (its blocked call raised PeerError). The others must still hear of that death, not only of
    # the store's end: a PeerError naming rank 0 would blame the wrong rank. The notices to the
    # others are held up on their way out (as a busy machine does), so that close() comes first.
    srv = StoreServer(4)
    srv.start()
    first = StoreClient(srv.address, srv.secret, 0, timeout=WAIT)
    first.on_peer_dead(lambda rank: srv.close())  # (in the client's reader thread: at once)
    to_first = srv._by_rank[0].channel
    send_packed = Channel.send_packed

    def held_up(channel, frame):
        if channel is not to_first and b'"event"' in frame:
            time.sleep(0.3)
        send_packed(channel, frame)

    monkeypatch.setattr(Channel, "send_packed", held_up)
    others = {rank: StoreClient(srv.address, srv.secret, rank, timeout=WAIT) for rank in (2, 3)}
    heard = {rank: [] for rank in others}
    for rank, client in others.items():
        client.on_peer_dead(heard[rank].append)
    StoreClient(srv.address, srv.secret, 1, timeout=WAIT).close(clean=False)
    deadline = time.monotonic() + WAIT
    while any(-1 not in h for h in heard.values()) and time.monotonic() < deadline:
        time.sleep(0.01)
    for client in [first, *others.values()]:
        client.close()
    assert heard == {rank: [1, -1] for rank in others}
