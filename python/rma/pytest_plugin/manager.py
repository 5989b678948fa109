"""The pools of one pytest session, and running an rma test on one of them."""

from __future__ import annotations

import collections
import contextlib
import itertools
import os
import pickle
import shutil
import sys
import tempfile
import time
import warnings

import pytest

from .._job.lifeline import Lifeline
from .marker import Variant, item_request
from .pool import EXIT_WAIT, Pool, PoolError
from .report import report

__all__ = ["Manager", "DEFAULT_TIMEOUT"]

#: Default timeout of a test, in seconds.
DEFAULT_TIMEOUT = 60.0
# Seconds a pool may take to start (interpreters, imports, rma.init()).
_START_TIMEOUT = 60.0
# Ranks of pools kept alive; beyond that the least recently used pools close.
_MAX_IDLE_RANKS = 12
# Arguments the plugin supplies on the ranks, never sent from here.
_RANK_SIDE_ARGS = ("comm",)


class Manager:
    """Own the pools of one pytest session and run rma items on them."""

    def __init__(self, config: pytest.Config):
        self.config = config
        self.pools: collections.OrderedDict = collections.OrderedDict()  # least recently used first
        self.closing: list[Pool] = []
        self.start_failures: dict = {}
        self._ids = itertools.count()
        self._directory: str | None = None
        self._lifeline: Lifeline | None = None

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
            self._lifeline = Lifeline()
        return self._directory, self._lifeline.read_end

    def acquire(self, nprocs: int, variant: Variant) -> Pool:
        # Keyed by the data path as marked, not by the one it resolves to, so that the
        # ranks' RMA_TRANSPORT and RMA_PROVIDER are always what the test asked for.
        key = (nprocs, variant)
        self.closing = [p for p in self.closing if not p.finished()]
        pool = self.pools.get(key)
        if pool is not None and not pool.alive():
            self.discard(pool)
            pool = None
        if pool is not None:
            self.pools.move_to_end(key)
            return pool
        what = f"{nprocs} rank(s){variant.describe()}"
        if key in self.start_failures:
            pytest.fail(
                f"rma: the pool of {what} failed to start earlier in this session:\n{self.start_failures[key]}",
                pytrace=False,
            )
        while self.pools and sum(p.size for p in self.pools.values()) + nprocs > _MAX_IDLE_RANKS:
            _, oldest = self.pools.popitem(last=False)
            oldest.request_exit()  # reaped later, without waiting here
            self.closing.append(oldest)
        directory, lifeline = self._resources()
        hook = self.config.hook

        def place(rank: int, argv: list[str], env: dict[str, str]) -> list[str] | None:
            return hook.pytest_rma_rank_command(config=self.config, rank=rank, size=nprocs, argv=argv, env=env)

        store_host = hook.pytest_rma_store_host(config=self.config)
        pool = Pool(key, nprocs, variant, directory, lifeline, next(self._ids), place, store_host)
        try:
            pool.wait_ready(_START_TIMEOUT, self._start_progress(what, nprocs))
        except PoolError as exc:
            # Remembered: a transport or provider that does not work here would otherwise cost
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

    # -- the terminal -----------------------------------------------------

    def _write_lines(self, lines: list[str]) -> None:
        terminal = self.config.pluginmanager.get_plugin("terminalreporter")
        if terminal is None:
            return
        capture = self.config.pluginmanager.get_plugin("capturemanager")
        # Written while a test runs, whose output pytest captures: straight to the terminal.
        with capture.global_and_fixture_disabled() if capture is not None else contextlib.nullcontext():
            for line in lines:
                terminal.write_line(line)
        # Not after the test's file or id any more: pytest starts a new line for the next one.
        terminal.currentfspath = None

    def _start_progress(self, what: str, size: int):
        """Report on the terminal how a long pool start goes, so that a session never looks stuck."""

        def progress(joined: int, seconds: float) -> None:
            state = "ready" if joined == size else f"{joined} of {size} joined"
            self._write_lines([f"rma: starting {what}: {state} after {seconds:.1f} s"])

        return progress

    def _show_stacks(self, item: pytest.Function, stacks: dict[int, str]) -> None:
        """Print where each rank of an interrupted test stood (they are stopped next)."""
        if not stacks:
            return
        lines = [f"rma: {item.nodeid} interrupted; where its ranks stood:"]
        for rank in sorted(stacks):
            lines.append(f"---- rank {rank} ----")
            lines.extend(f"[rank {rank}] {line}" for line in (stacks[rank] or "(no stack received)").splitlines())
        self._write_lines(lines)

    def discard(self, pool: Pool) -> None:
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
            deadline = time.monotonic() + EXIT_WAIT
            for pool in pools:
                pool.finish(deadline)
        finally:
            for pool in pools:
                pool.kill()  # no-op for pools that finished; a second Ctrl-C lands here
            if self._lifeline is not None:
                self._lifeline.close()
                self._lifeline = None
            if self._directory is not None:
                shutil.rmtree(self._directory, ignore_errors=True)
                self._directory = None

    # -- running an item --------------------------------------------------

    def run_item(self, item: pytest.Function, marker: pytest.Mark) -> None:
        nprocs, variant, spec = item_request(item, marker)
        timeout = spec.timeout if spec.timeout is not None else self.default_timeout()
        command = _command(item)
        pool = self.acquire(nprocs, variant)
        try:
            outcome = pool.run(command, timeout)
        except BaseException:
            # Ctrl-C or a bug here: the ranks are in an unknown state.
            self._show_stacks(item, pool.interrupted_stacks)
            self.discard(pool)
            raise
        broken = outcome.pool_broken()
        try:
            report(item, pool, outcome, timeout)
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
