"""pytest plugin of rma: run a test function on several ranks.

Installing rma registers this plugin.  Mark a test and take the ``comm`` fixture::

    @pytest.mark.rma(nprocs=4)
    def test_ring(comm):
        right = (comm.rank + 1) % comm.size
        comm.send(comm.rank, right)
        assert comm.recv((comm.rank - 1) % comm.size) == (comm.rank - 1) % comm.size

Marker keywords:

* ``nprocs``: the number of ranks (default 1), or a list of them: ``nprocs=[1, 2, 4]``
  runs the test once per size, with ids like ``test_ring[nprocs=2]``.
* ``providers``: ``"shm"``, ``"tcp"`` or a list of them (default: the automatic choice,
  or RMA_PROVIDER of the environment); a list runs the test once per provider, with
  ids like ``test_ring[provider=tcp-nprocs=2]``.  The ranks' RMA_PROVIDER is the
  provider as marked.
* ``timeout``: seconds the ranks may take (default 60; ``--rma-timeout`` or the ini
  option ``rma_timeout`` change the default, 0 meaning none).  Starting the ranks
  does not count.

The marker may also sit on a class or module (``pytestmark``).  A marked test need
not take ``comm`` (``rma.init()`` on a rank returns the ranks' world communicator);
``comm`` in an unmarked test is an error.

The test function runs on every rank of a pool of worker processes (kept between
tests, one pool per rank count and provider) with ``comm``, a communicator of those
ranks made fresh for each test.  Its other arguments (``@pytest.mark.parametrize``
values, fixtures such as ``tmp_path``) are computed in the pytest process and sent
to the ranks pickled; fixtures themselves run in the pytest process only, and so do
xunit-style setup methods.  The ranks see the pytest process's working directory,
environment, sys.path and warning filters as they were at the call.

Reporting: a failure on any rank fails the test with that rank's traceback (under
``---- rank N ----``); ranks still blocked a few seconds after another rank failed
are stopped and reported with their stacks.  A test that passes its timeout is
stopped and reported with the stack of every rank; a rank process that dies is
reported with its exit status and the end of its stderr.  ``pytest.skip()`` and
``pytest.xfail()`` on a rank work as usual.  Each rank's output appears as report
sections "stdout rank N" / "stderr rank N".  Tests of the same rank count and
provider within one module or class run next to each other, so that pools are
reused (``--rma-keep-order`` turns this off); the order of other tests is kept.
"""

from __future__ import annotations

import collections
import itertools
import os
import pickle
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from typing import NamedTuple

import pytest

from ._job.shm_files import cleanup_shm_files
from ._job.spawn import describe_exit, killpg
from ._job.store_server import StoreServer
from ._test_worker import FrameReader, send_frame

__all__ = ["DEFAULT_TIMEOUT"]

#: Default timeout of a test, in seconds.
DEFAULT_TIMEOUT = 60.0
# Seconds a pool may take to start (interpreters, imports, rma.init()).
_START_TIMEOUT = 60.0
# Seconds the other ranks get to finish once one rank failed or died; longer
# means they are most likely blocked waiting for it.
_FAIL_GRACE = 3.0
# Longest wait for the faulthandler dumps of stuck ranks.
_STACK_WAIT = 1.5
# Seconds workers get to exit on their own at the end of the session.
_EXIT_WAIT = 5.0
# Ranks of pools kept alive; beyond that the least recently used pools close.
_MAX_IDLE_RANKS = 12
# Characters of a dead rank's stderr shown in the failure message.
_TAIL_CHARS = 4000
# Seconds a blocking send on a control channel may stall.
_SEND_TIMEOUT = 10.0

# The hidden fixture that carries (nprocs, provider) of a parametrized rma test.
_PARAM = "_rma_params"
_MARKER_KEYWORDS = ("nprocs", "providers", "timeout")
# Arguments the plugin supplies on the ranks, never sent from here.
_RANK_SIDE_ARGS = ("comm",)


# --------------------------------------------------------------------------
# the marker


class _Spec(NamedTuple):
    nprocs: list[int]
    nprocs_listed: bool
    providers: list[str | None]
    providers_listed: bool
    timeout: float | None


def _bad_marker(where: str, problem: str):
    pytest.fail(f"{where}: @pytest.mark.rma: {problem}", pytrace=False)


def _parse_marker(marker: pytest.Mark, where: str) -> _Spec:
    """Check the rma marker's arguments and return them in a normal form."""
    kwargs = dict(marker.kwargs)
    if marker.args:
        # @pytest.mark.rma(4) reads naturally enough to accept.
        if len(marker.args) > 1 or "nprocs" in kwargs:
            _bad_marker(where, "takes at most one positional argument, nprocs")
        kwargs["nprocs"] = marker.args[0]
    unknown = sorted(set(kwargs) - set(_MARKER_KEYWORDS))
    if unknown:
        _bad_marker(where, f"unknown argument(s) {', '.join(unknown)}; expected {', '.join(_MARKER_KEYWORDS)}")

    nprocs = kwargs.get("nprocs", 1)
    nprocs_listed = isinstance(nprocs, (list, tuple))
    sizes = list(nprocs) if nprocs_listed else [nprocs]
    if not sizes:
        _bad_marker(where, "nprocs is an empty list")
    for n in sizes:
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            _bad_marker(where, f"nprocs must be a positive integer or a list of them, not {n!r}")

    providers = kwargs.get("providers")
    providers_listed = isinstance(providers, (list, tuple))
    names = list(providers) if providers_listed else [providers]
    if not names:
        _bad_marker(where, "providers is an empty list")
    for name in names:
        valid = isinstance(name, str) and name.strip() != "" or (name is None and not providers_listed)
        if not valid:
            _bad_marker(where, f'providers must be a provider name ("shm", "tcp") or a list of them, not {name!r}')

    timeout = kwargs.get("timeout")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0):
        _bad_marker(where, f"timeout must be a positive number of seconds, not {timeout!r}")
    return _Spec(sizes, nprocs_listed, names, providers_listed, None if timeout is None else float(timeout))


def _item_request(item: pytest.Item, marker: pytest.Mark) -> tuple[int, str | None, _Spec]:
    """Return (nprocs, provider as marked, spec) of an rma item."""
    spec = _parse_marker(marker, item.nodeid)
    callspec = getattr(item, "callspec", None)
    if callspec is not None and _PARAM in callspec.params:
        nprocs, provider = callspec.params[_PARAM]
    else:
        nprocs, provider = spec.nprocs[0], spec.providers[0]
    return nprocs, provider, spec


# --------------------------------------------------------------------------
# hooks and fixtures


_manager_key = pytest.StashKey["_Manager"]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("rma", "rma multi-rank tests")
    group.addoption(
        "--rma-timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help=f"default timeout of @pytest.mark.rma tests (default {DEFAULT_TIMEOUT:g}; 0 = none); "
        "a marker's timeout= wins",
    )
    group.addoption(
        "--rma-keep-order",
        action="store_true",
        default=False,
        help="do not run rma tests of the same rank count and provider next to each other",
    )
    parser.addini("rma_timeout", f"default timeout of @pytest.mark.rma tests (default {DEFAULT_TIMEOUT:g})", default="")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "rma(nprocs=1, providers=None, timeout=60): run the test function on nprocs ranks "
        "with a `comm` fixture; lists of nprocs or providers parametrize the test.",
    )
    config.stash[_manager_key] = _Manager(config)


def pytest_unconfigure(config: pytest.Config) -> None:
    manager = config.stash.get(_manager_key, None)
    if manager is not None:
        del config.stash[_manager_key]
        manager.shutdown()


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    marker = metafunc.definition.get_closest_marker("rma")
    if marker is None:
        return
    spec = _parse_marker(marker, metafunc.definition.nodeid)
    if not (spec.nprocs_listed or spec.providers_listed):
        return  # a single configuration needs no parameter and gets no id
    values, ids = [], []
    for provider in spec.providers:
        for nprocs in spec.nprocs:
            values.append((nprocs, provider))
            parts = []
            if spec.providers_listed:
                parts.append(f"provider={provider}")
            if spec.nprocs_listed:
                parts.append(f"nprocs={nprocs}")
            ids.append("-".join(parts))
    metafunc.parametrize(_PARAM, values, ids=ids)


@pytest.fixture(scope="session", autouse=True, name=_PARAM)
def _rma_params_fixture():
    """Carry the (nprocs, provider) parameter of rma tests (overridden by parametrization).

    Being autouse, it is in every test's fixture closure, so that rma tests can be
    parametrized through it whether or not they take the `comm` fixture.  Being
    session-scoped, it costs other tests nothing.
    """
    return None


class _RankSideOnly:
    """Stand in for `comm` in the pytest process, where the test function does not run."""

    def __getattr__(self, name):
        raise RuntimeError(
            "rma: the `comm` fixture only exists on the ranks, in the test function itself; "
            "fixtures run in the pytest process"
        )

    def __repr__(self) -> str:
        return "<rma comm: only on the ranks>"


@pytest.fixture
def comm(request: pytest.FixtureRequest):
    """The communicator of the ranks that run an @pytest.mark.rma test (fresh for each test)."""
    if request.node.get_closest_marker("rma") is None:
        pytest.fail(
            f"{request.node.nodeid}: the `comm` fixture needs the test to be marked "
            "@pytest.mark.rma(nprocs=...)",
            pytrace=False,
        )
    return _RankSideOnly()


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("rma_keep_order"):
        return
    _group_by_pool(items)


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function):
    marker = pyfuncitem.get_closest_marker("rma")
    if marker is None:
        return None
    pyfuncitem.config.stash[_manager_key].run_item(pyfuncitem, marker)
    return True


def _group_by_pool(items: list[pytest.Item]) -> None:
    """Reorder rma items so that those using the same pool run one after another.

    Only within a run of items of the same parent (module or class), so that
    module and class fixtures are not set up twice and reports stay grouped by
    file, and only among the slots rma items already occupy, so that every other
    item keeps its place.  Stable: items of one pool keep their relative order.
    """
    keys = []
    for item in items:
        marker = item.get_closest_marker("rma") if isinstance(item, pytest.Function) else None
        try:
            if marker is None:
                raise LookupError
            nprocs, provider, _ = _item_request(item, marker)
            keys.append((nprocs, provider))
        except (Exception, pytest.fail.Exception):  # a bad marker is reported at collection
            keys.append(None)
    start = 0
    while start < len(items):
        end = start
        while end < len(items) and items[end].parent is items[start].parent:
            end += 1
        slots = [i for i in range(start, end) if keys[i] is not None]
        first_seen: dict = {}
        for i in slots:
            first_seen.setdefault(keys[i], len(first_seen))
        if len(first_seen) > 1:
            ordered = sorted(slots, key=lambda i: first_seen[keys[i]])
            moved = [items[i] for i in ordered]
            for slot, item in zip(slots, moved):
                items[slot] = item
        start = end


# --------------------------------------------------------------------------
# worker pools


class _PoolError(Exception):
    """A pool could not be started; the message says why."""


class _Worker:
    """One rank process of a pool, with its control channel and files."""

    def __init__(self, rank: int, proc: subprocess.Popen, sock: socket.socket, prefix: str):
        self.rank = rank
        self.proc = proc
        self.pid = proc.pid
        self.sock = sock
        self.prefix = prefix
        self.reader = FrameReader()
        self.main_thread: int | None = None

    def receive(self) -> list | None:
        """Read what is available (the socket is readable); None at end of file."""
        try:
            data = self.sock.recv(1 << 16)
        except (BlockingIOError, InterruptedError, socket.timeout):
            return []
        except OSError:
            return None
        if not data:
            return None
        try:
            return self.reader.feed(data)
        except Exception:  # noqa: BLE001 - a garbled channel: treat the worker as lost
            return None

    def read_file(self, suffix: str, limit: int = _TAIL_CHARS) -> str:
        """Return the end of one of the worker's files ("" when missing)."""
        try:
            with open(self.prefix + suffix, "rb") as f:
                size = f.seek(0, os.SEEK_END)
                f.seek(max(0, size - limit))
                data = f.read()
        except OSError:
            return ""
        text = data.decode("utf-8", errors="replace")
        return f"[...]{text}" if size > limit else text

    def status(self) -> str:
        code = self.proc.poll()
        return "still running" if code is None else describe_exit(code)


def _reap_dead(w: _Worker) -> None:
    """Collect the exit status of a worker whose channel closed, i.e. that is exiting."""
    # Its group first, while the unreaped worker still holds the group id: a dead
    # worker's test may have left processes behind.
    killpg(w.pid, signal.SIGKILL)
    try:
        w.proc.wait(timeout=_EXIT_WAIT)
    except subprocess.TimeoutExpired:
        pass


class _Outcome:
    """What the ranks of a pool did with one test."""

    def __init__(self, size: int):
        self.replies: dict[int, dict] = {}
        self.died: set[int] = set()
        self.pending: set[int] = set(range(size))
        self.timed_out = False
        self.lost_after_reply = False
        self.stacks: dict[int, str] = {}

    def pool_broken(self) -> bool:
        """Whether the pool can no longer serve tests (some rank gone or in an unknown state)."""
        return (
            bool(self.pending or self.died)
            or self.lost_after_reply
            or any(reply.get("retire") for reply in self.replies.values())
        )


class _Pool:
    """N worker ranks that joined one job, serving tests one at a time."""

    def __init__(self, key, nprocs: int, provider: str | None, directory: str, lifeline: int, ident: int):
        self.key = key
        self.size = nprocs
        self.workers: list[_Worker] = []
        self._seq = itertools.count(1)
        self._cleaned = False
        self.store = StoreServer(nprocs)
        self.store.start()
        try:
            for rank in range(nprocs):
                self.workers.append(self._spawn(rank, provider, os.path.join(directory, f"p{ident}r{rank}"), lifeline))
        except BaseException:
            self.kill()
            raise

    def _spawn(self, rank: int, provider: str | None, prefix: str, lifeline: int) -> _Worker:
        ours, theirs = socket.socketpair()
        try:
            env = dict(os.environ)
            env.update(
                RMA_RANK=str(rank),
                RMA_SIZE=str(self.size),
                RMA_STORE=self.store.address,
                RMA_SECRET=self.store.secret,
                PYTHONUNBUFFERED="1",
                RMA_TEST_CONTROL_FD=str(theirs.fileno()),
                RMA_TEST_LIFELINE_FD=str(lifeline),
                RMA_TEST_FILES=prefix,
            )
            if provider is not None:
                env["RMA_PROVIDER"] = provider  # else the environment's, or the automatic choice
            with open(prefix + ".log", "wb") as log:
                proc = subprocess.Popen(
                    [sys.executable, "-m", "rma._test_worker"],
                    env=env,
                    stdin=subprocess.DEVNULL,
                    # Output outside of tests (e.g. a crash at import) goes to a file,
                    # read when the worker dies; a file never blocks the worker.
                    stdout=log,
                    stderr=log,
                    pass_fds=(theirs.fileno(), lifeline),
                    # Own process group: Ctrl-C on the terminal reaches pytest only,
                    # and killpg() reaches whatever a test started.
                    start_new_session=True,
                )
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        ours.settimeout(_SEND_TIMEOUT)
        return _Worker(rank, proc, ours, prefix)

    # -- start-up ---------------------------------------------------------

    def wait_ready(self, timeout: float) -> None:
        """Wait until every rank joined the job; raise _PoolError (after killing the pool) if not."""
        deadline = time.monotonic() + timeout
        pending = {w.rank for w in self.workers}
        with selectors.DefaultSelector() as sel:
            for w in self.workers:
                sel.register(w.sock, selectors.EVENT_READ, w)
            while pending:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    self._fail_start(
                        f"ranks {_ranks(pending)} did not join the job within {timeout:g} s", pending
                    )
                for key, _ in sel.select(remaining):
                    w = key.data
                    frames = w.receive()
                    if frames is None:
                        _reap_dead(w)
                        self._fail_start(f"rank {w.rank} exited while starting ({w.status()})", {w.rank})
                    for frame in frames:
                        if frame.get("op") == "ready":
                            w.main_thread = frame.get("main_thread")
                            pending.discard(w.rank)
                        elif frame.get("op") == "failed":
                            self.kill()
                            raise _PoolError(f"rank {w.rank} failed to join the job:\n{frame.get('text', '')}")

    def _fail_start(self, message: str, ranks: set[int]):
        parts = [message]
        for w in self.workers:
            if w.rank in ranks:
                log = w.read_file(".log").strip()
                parts.append(f"---- rank {w.rank} output ----\n{log or '(none)'}")
        self.kill()
        raise _PoolError("\n".join(parts))

    # -- running a test ---------------------------------------------------

    def alive(self) -> bool:
        return all(w.proc.poll() is None for w in self.workers)

    def run(self, command: dict, timeout: float | None) -> _Outcome:
        """Run one test on every rank and collect what each did."""
        seq = next(self._seq)
        payload = pickle.dumps(dict(command, seq=seq), pickle.HIGHEST_PROTOCOL)
        outcome = _Outcome(self.size)
        with selectors.DefaultSelector() as sel:
            for w in self.workers:
                try:
                    send_frame(w.sock, payload)
                    sel.register(w.sock, selectors.EVENT_READ, w)
                except OSError:
                    # Died while idle; its status is reported like a death mid-test.
                    outcome.pending.discard(w.rank)
                    outcome.died.add(w.rank)
            deadline = None if timeout is None else time.monotonic() + timeout
            trouble_at = time.monotonic() if outcome.died else None
            while outcome.pending:
                limit = deadline
                if trouble_at is not None:
                    limit = trouble_at + _FAIL_GRACE if limit is None else min(limit, trouble_at + _FAIL_GRACE)
                remaining = None if limit is None else limit - time.monotonic()
                if remaining is not None and remaining <= 0:
                    outcome.timed_out = trouble_at is None or (deadline is not None and time.monotonic() >= deadline)
                    break
                for key, _ in sel.select(remaining):
                    w = key.data
                    frames = w.receive()
                    if frames is None:
                        sel.unregister(w.sock)
                        _reap_dead(w)
                        if w.rank in outcome.replies:
                            # It finished this test and died afterwards: the test
                            # stands, but the pool is no use any more.
                            outcome.lost_after_reply = True
                            continue
                        outcome.pending.discard(w.rank)
                        outcome.died.add(w.rank)
                        trouble_at = trouble_at or time.monotonic()
                        continue
                    for frame in frames:
                        if frame.get("seq") != seq:
                            continue
                        outcome.replies[w.rank] = frame
                        outcome.pending.discard(w.rank)
                        if frame.get("outcome") == "failed" and trouble_at is None:
                            trouble_at = time.monotonic()
        if outcome.pending:
            outcome.stacks = self.dump_stacks(outcome.pending)
        return outcome

    def dump_stacks(self, ranks: set[int]) -> dict[int, str]:
        """Ask the given ranks for their Python stacks (faulthandler on SIGUSR1)."""
        targets = [w for w in self.workers if w.rank in ranks and w.proc.poll() is None]
        for w in targets:
            try:
                os.kill(w.pid, signal.SIGUSR1)
            except OSError:
                pass
        sizes = {w.rank: -1 for w in targets}
        deadline = time.monotonic() + _STACK_WAIT
        # faulthandler writes from the signal handler at once; wait until every
        # file is non-empty and has stopped growing, or the deadline passes.
        while targets and time.monotonic() < deadline:
            time.sleep(0.05)
            done = True
            for w in targets:
                try:
                    size = os.path.getsize(w.prefix + ".stacks")
                except OSError:
                    size = 0
                if size == 0 or size != sizes[w.rank]:
                    done = False
                sizes[w.rank] = size
            if done:
                break
        return {w.rank: _format_stacks(w.read_file(".stacks", 1 << 16), w.main_thread) for w in targets}

    # -- ending -----------------------------------------------------------

    def request_exit(self) -> None:
        """Tell every worker to finalize and exit (returns at once)."""
        for w in self.workers:
            try:
                send_frame(w.sock, {"op": "exit"})
            except OSError:
                pass

    def finished(self) -> bool:
        """Clean up and return True if every worker has exited (never blocks)."""
        if all(w.proc.poll() is not None for w in self.workers):
            self._cleanup()
            return True
        return False

    def finish(self, deadline: float) -> None:
        """Wait until the deadline for the workers to exit, then kill what is left."""
        for w in self.workers:
            try:
                w.proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
        self.kill()

    def kill(self) -> None:
        """Kill every worker and whatever it started, and release the pool. Idempotent."""
        for w in self.workers:
            # Only while the worker is unreaped: until then its pid, and so its
            # process group id, cannot have been reused by another process.
            if w.proc.returncode is None:
                killpg(w.pid, signal.SIGKILL)
        for w in self.workers:
            try:
                w.proc.wait(timeout=_EXIT_WAIT)
            except subprocess.TimeoutExpired:
                pass  # unkillable (stuck in the kernel): nothing more can be done
        self._cleanup()

    def _cleanup(self) -> None:
        if self._cleaned:
            return
        self._cleaned = True
        for w in self.workers:
            w.sock.close()
        self.store.close()
        # Killed ranks cannot unlink the shared-memory files the shm provider
        # named after their pids.
        cleanup_shm_files(w.pid for w in self.workers)
        for w in self.workers:
            for suffix in (".log", ".out", ".err", ".stacks"):
                try:
                    os.unlink(w.prefix + suffix)
                except OSError:
                    pass


class _Manager:
    """Own the pools of one pytest session and run rma items on them."""

    def __init__(self, config: pytest.Config):
        self.config = config
        self.pools: collections.OrderedDict = collections.OrderedDict()  # least recently used first
        self.closing: list[_Pool] = []
        self.start_failures: dict = {}
        self._ids = itertools.count()
        self._directory: str | None = None
        self._lifeline: tuple[int, int] | None = None

    def default_timeout(self) -> float | None:
        value = self.config.getoption("rma_timeout")
        if value is None:
            text = str(self.config.getini("rma_timeout") or "").strip()
            try:
                value = float(text) if text else DEFAULT_TIMEOUT
            except ValueError:
                raise pytest.UsageError(f"rma_timeout = {text!r} is not a number of seconds") from None
        return value if value > 0 else None

    # -- pools ------------------------------------------------------------

    def _resources(self) -> tuple[str, int]:
        if self._directory is None:
            self._directory = tempfile.mkdtemp(prefix="rma-pytest-")
        if self._lifeline is None:
            # Workers watch the read end; the write end stays here, so that its
            # end of file tells them that this process is gone, however it ended.
            self._lifeline = os.pipe()
        return self._directory, self._lifeline[0]

    def acquire(self, nprocs: int, provider: str | None) -> _Pool:
        # Keyed by the provider as marked, not by the one it resolves to, so that
        # the ranks' RMA_PROVIDER is always what the test asked for.
        key = (nprocs, provider)
        self.closing = [p for p in self.closing if not p.finished()]
        pool = self.pools.get(key)
        if pool is not None and not pool.alive():
            self.discard(pool)
            pool = None
        if pool is not None:
            self.pools.move_to_end(key)
            return pool
        what = f"{nprocs} rank(s)" + (f" with provider {provider!r}" if provider else "")
        if key in self.start_failures:
            pytest.fail(
                f"rma: the pool of {what} failed to start earlier in this session:\n"
                f"{self.start_failures[key]}",
                pytrace=False,
            )
        while self.pools and sum(p.size for p in self.pools.values()) + nprocs > _MAX_IDLE_RANKS:
            _, oldest = self.pools.popitem(last=False)
            oldest.request_exit()  # reaped later, without waiting here
            self.closing.append(oldest)
        directory, lifeline = self._resources()
        pool = _Pool(key, nprocs, provider, directory, lifeline, next(self._ids))
        try:
            pool.wait_ready(_START_TIMEOUT)
        except _PoolError as exc:
            # Remembered: a provider that does not work here would otherwise cost
            # a start-up for every test that asks for it.
            self.start_failures[key] = str(exc)
        except BaseException:
            pool.kill()
            raise
        else:
            self.pools[key] = pool
            return pool
        # Outside the except clause, so that the report shows no exception chain.
        pytest.fail(f"rma: could not start {what}:\n{self.start_failures[key]}", pytrace=False)

    def discard(self, pool: _Pool) -> None:
        if self.pools.get(pool.key) is pool:
            del self.pools[pool.key]
        pool.kill()

    def shutdown(self) -> None:
        pools = list(self.pools.values()) + self.closing
        self.pools.clear()
        self.closing = []
        try:
            for pool in pools:
                pool.request_exit()
            deadline = time.monotonic() + _EXIT_WAIT
            for pool in pools:
                pool.finish(deadline)
        finally:
            for pool in pools:
                pool.kill()  # no-op for pools that finished; a second Ctrl-C lands here
            if self._lifeline is not None:
                for fd in self._lifeline:
                    os.close(fd)
                self._lifeline = None
            if self._directory is not None:
                shutil.rmtree(self._directory, ignore_errors=True)
                self._directory = None

    # -- running an item --------------------------------------------------

    def run_item(self, item: pytest.Function, marker: pytest.Mark) -> None:
        nprocs, provider, spec = _item_request(item, marker)
        timeout = spec.timeout if spec.timeout is not None else self.default_timeout()
        command = _command(item)
        pool = self.acquire(nprocs, provider)
        try:
            outcome = pool.run(command, timeout)
        except BaseException:
            # Ctrl-C or a bug here: the ranks are in an unknown state.
            self.discard(pool)
            raise
        broken = outcome.pool_broken()
        try:
            _report(item, pool, outcome, timeout)
        finally:
            # After the report, which reads the files of dead or stopped ranks.
            if broken:
                self.discard(pool)


def _command(item: pytest.Function) -> dict:
    """Describe the test for the workers; fail the test if an argument cannot travel."""
    fixtureinfo = getattr(item, "_fixtureinfo", None)
    argnames = tuple(fixtureinfo.argnames) if fixtureinfo is not None else tuple(item.funcargs)
    kwargs = {}
    for name in argnames:
        if name in _RANK_SIDE_ARGS:
            continue
        value = item.funcargs[name]
        problem = None
        try:
            pickle.dumps(value, pickle.HIGHEST_PROTOCOL)
        except Exception as exc:  # noqa: BLE001 - any pickling failure
            problem = f"{type(exc).__name__}: {exc}"
        if problem is not None:
            callspec = getattr(item, "callspec", None)
            kind = "parameter" if callspec is not None and name in callspec.params else "fixture"
            pytest.fail(
                f"rma: the {kind} {name!r} of {item.name} cannot be sent to the ranks: "
                f"it does not pickle ({problem}). Only picklable fixture values "
                "and parameters can reach an @pytest.mark.rma test.",
                pytrace=False,
            )
        kwargs[name] = value
    try:
        # The session's current filters: pytest's, plus the item's filterwarnings marks.
        filters = pickle.dumps(list(warnings.filters), pickle.HIGHEST_PROTOCOL)
    except Exception:  # noqa: BLE001 - e.g. a filter on an unpicklable category
        filters = None
    path = getattr(item.module, "__file__", None) or str(item.path)
    return {
        "op": "run",
        "path": os.path.abspath(path),
        "module": item.module.__name__,
        "cls": item.cls.__qualname__ if item.cls is not None else None,
        "name": item.originalname,
        "kwargs": pickle.dumps(kwargs, pickle.HIGHEST_PROTOCOL),
        "pass_comm": "comm" in argnames,
        "warning_filters": filters,
        "cwd": os.getcwd(),
        "env": dict(os.environ),
        "sys_path": list(sys.path),
    }


# --------------------------------------------------------------------------
# reporting


def _ranks(ranks) -> str:
    return ", ".join(str(r) for r in sorted(ranks))


def _plural(ranks) -> str:
    return f"rank {_ranks(ranks)}" if len(ranks) == 1 else f"ranks {_ranks(ranks)}"


_WORKER_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_test_worker.py")
# Frames of threads that are rma's machinery, not the test's: shown only as a count.
_MACHINERY_FILES = (_WORKER_FILE,) + tuple(
    os.path.join(os.path.dirname(_WORKER_FILE), "_job", name) for name in ("store_client.py", "frames.py")
)


def _frame_file(line: str) -> str | None:
    line = line.strip()
    if not line.startswith('File "'):
        return None
    return line[len('File "') :].split('", line ', 1)[0]


def _format_stacks(dump: str, main_thread: int | None) -> str:
    """Make a faulthandler dump readable: the test's thread first, without the worker's frames."""
    blocks = [b for b in dump.strip().split("\n\n") if b.strip()]
    if not blocks:
        return ""
    tag = None if main_thread is None else f"0x{main_thread:016x}"
    main, others, hidden = [], [], 0
    for block in blocks:
        header, *frames = block.splitlines()
        files = [_frame_file(f) for f in frames]
        if tag is not None and tag in header:
            # Most recent call first: the frames below the test are the worker's loop.
            while frames and (files[-1] in _MACHINERY_FILES or (files[-1] or "").startswith("<frozen")):
                frames.pop()
                files.pop()
            main.append("\n".join([f"Thread running the test {tag} (most recent call first):", *frames]))
        elif files and all(f is None or f in _MACHINERY_FILES or os.path.basename(f) == "threading.py" for f in files):
            hidden += 1
        else:
            others.append(block)
    text = "\n\n".join(main + others)
    if hidden:
        text += f"\n({hidden} thread(s) of rma's own not shown)"
    return text


def _warning_category(names) -> type[Warning]:
    module_name, qualname = names
    obj = sys.modules.get(module_name)
    for part in qualname.split("."):
        obj = getattr(obj, part, None)
    return obj if isinstance(obj, type) and issubclass(obj, Warning) else UserWarning


def _report(item: pytest.Function, pool: _Pool, outcome: _Outcome, timeout: float | None) -> None:
    """Turn what the ranks did into the item's outcome: return, fail, skip or xfail."""
    size = pool.size
    by_rank = {w.rank: w for w in pool.workers}
    for rank in range(size):
        reply = outcome.replies.get(rank)
        if reply is not None:
            out, err = reply.get("stdout", ""), reply.get("stderr", "")
        else:
            # Died or stopped mid-test: what it wrote before is still in its files.
            out, err = by_rank[rank].read_file(".out", 1 << 20), by_rank[rank].read_file(".err", 1 << 20)
        item.add_report_section("call", f"stdout rank {rank}", out)
        if rank not in outcome.died:  # the end of a dead rank's stderr is in the message
            item.add_report_section("call", f"stderr rank {rank}", err)

    failed = sorted(r for r, reply in outcome.replies.items() if reply.get("outcome") == "failed")
    if failed or outcome.died or outcome.pending:
        lines = []
        if outcome.timed_out:
            lines.append(
                f"timed out after {timeout:g} s on {size} rank(s); "
                f"{_plural(outcome.pending)} still running"
            )
        if outcome.died:
            lines.append(
                "; ".join(f"rank {r} died during the test ({by_rank[r].status()})" for r in sorted(outcome.died))
            )
        if failed:
            lines.append(f"{_plural(failed)} failed")
        if outcome.pending and not outcome.timed_out:
            lines.append(
                f"{_plural(outcome.pending)} still running {_FAIL_GRACE:g} s later "
                "(probably waiting for the failed rank): stopped"
            )
        passed = sorted(r for r, reply in outcome.replies.items() if reply.get("outcome") == "passed")
        if passed and len(passed) < size:
            lines.append(f"({_plural(passed)} passed)")
        # The causes first (failures, deaths), then the ranks stopped in their wake.
        for rank in failed:
            lines.append(f"---- rank {rank} ----\n{outcome.replies[rank].get('text', '').rstrip()}")
        for rank in sorted(outcome.died):
            tail = by_rank[rank].read_file(".err").rstrip() or by_rank[rank].read_file(".log").rstrip()
            lines.append(
                f"---- rank {rank} (died: {by_rank[rank].status()}); end of its stderr ----\n"
                f"{tail or '(nothing)'}"
            )
        for rank in sorted(outcome.pending):
            stack = outcome.stacks.get(rank) or "(no stack received)"
            lines.append(f"---- rank {rank} (still running); its stack ----\n{stack}")
        pytest.fail("\n".join(lines), pytrace=False)

    # Every rank returned: re-emit their warnings under this session's filters.
    seen: dict[tuple, list[int]] = {}
    for rank in sorted(outcome.replies):
        for record in outcome.replies[rank].get("warnings", ()):
            key = (tuple(record["category"]), record["message"], record["filename"], record["lineno"])
            seen.setdefault(key, []).append(rank)
    for (category_names, message, filename, lineno), ranks in seen.items():
        category = _warning_category(category_names)
        raised = None
        try:
            warnings.warn_explicit(message, category, filename, lineno)
        except Warning as exc:
            # Only if the filters here differ from those the ranks got.
            raised = str(exc)
        if raised is not None:
            pytest.fail(f"{_plural(ranks)}: {filename}:{lineno}: {category.__name__}: {raised}", pytrace=False)

    for kind, give_up in (("xfailed", pytest.xfail), ("skipped", pytest.skip)):
        ranks = sorted(r for r, reply in outcome.replies.items() if reply.get("outcome") == kind)
        if ranks:
            reason = outcome.replies[ranks[0]].get("text", "")
            if len(ranks) < size:
                reason = f"{_plural(ranks)}: {reason}"
            give_up(reason)
