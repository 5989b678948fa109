"""pytest plugin of rma: run a test function on several ranks.

Installing rma registers this plugin.  Mark a test and take the ``comm`` fixture::

    @pytest.mark.rma(nprocs=4)
    def test_ring(comm):
        right = (comm.rank + 1) % comm.size
        comm.send(comm.rank, right)
        assert comm.recv((comm.rank - 1) % comm.size) == (comm.rank - 1) % comm.size

Marker keywords:

* ``nprocs``: the number of ranks (default 1), or a list of them: ``nprocs=[1, 2, 4]``
  runs the test once per size, with ids like ``test_ring[nprocs2]``.
* ``transports``: ``"shared-memory"``, ``"libfabric"`` or a list of them (default: the
  environment's RMA_TRANSPORT, else the automatic choice); the ranks' RMA_TRANSPORT, so that
  windows and messages take that data path.
* ``providers``: a libfabric provider (``"shm"``, ``"tcp"``) or a list of them (default: the
  environment's RMA_PROVIDER, else the automatic choice); the ranks' RMA_PROVIDER.  A provider
  is libfabric's: without ``transports``, naming one means ``transports="libfabric"``; with
  both, shared memory runs once and libfabric once per provider.
  Lists make ids of words that ``-k`` takes: ``test_ring[shared-memory-nprocs2]``,
  ``test_ring[libfabric-tcp-nprocs2]``.
* ``timeout``: seconds the ranks may take (default 60; ``--rma-timeout`` or the ini
  option ``rma_timeout`` change the default, 0 meaning none).  Starting the ranks
  does not count.

The marker may also sit on a class or module (``pytestmark``).  A marked test need
not take ``comm`` (``rma.init()`` on a rank returns the ranks' world communicator);
``comm`` in an unmarked test is an error.

The test function runs on every rank of a pool of worker processes (kept between
tests, one pool per rank count and data path) with ``comm``, a communicator of those
ranks made fresh for each test.  Its other arguments (``@pytest.mark.parametrize``
values, fixtures such as ``tmp_path``) are computed in the pytest process and sent
to the ranks pickled; fixtures themselves run in the pytest process only, and so do
xunit-style setup methods.  The ranks see the pytest process's working directory,
environment, sys.path and warning filters as they were at the call.

Reporting: a failure on any rank fails the test with that rank's traceback (under
``---- rank N ----``) and its exception on the first line, which pytest's short summary
shows; ranks still blocked a few seconds after another rank failed are stopped and
reported with their stacks.  A test that passes its timeout is stopped and reported with
the stack of every rank; a rank process that dies is reported with its exit status and
the end of its stderr.  ``pytest.skip()`` and ``pytest.xfail()`` on a rank work as usual.
A pool that is slow to start says so on the terminal; Ctrl-C prints the stack of every
rank of the running test before stopping them.  Each rank's output appears as report
sections "stdout rank N" / "stderr rank N".  Tests of the same rank count and data path
within one module or class run next to each other, so that pools are
reused (``--rma-keep-order`` turns this off); the order of other tests is kept.

The plugin's files: this one (hooks and fixtures), marker.py (the marker's arguments),
order.py (grouping tests by pool), manager.py (the session's pools; running one test),
pool.py (the ranks of one pool, serving tests), hooks.py (where ranks start, for a conftest.py
that places them on other hosts), report.py and stacks.py (a test's outcome,
stacks of stuck ranks), and worker/ (a rank: runs the tests it is sent).
"""

from __future__ import annotations

import pytest

from .manager import DEFAULT_TIMEOUT, Manager
from .marker import PARAM, parse_marker
from .order import group_by_pool

__all__ = ["DEFAULT_TIMEOUT"]


_manager_key = pytest.StashKey[Manager]()


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
        help="do not run rma tests of the same rank count and data path next to each other",
    )
    parser.addini("rma_timeout", f"default timeout of @pytest.mark.rma tests (default {DEFAULT_TIMEOUT:g})", default="")


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from . import hooks

    pluginmanager.add_hookspecs(hooks)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "rma(nprocs=1, transports=None, providers=None, timeout=60): run the test function on nprocs "
        "ranks with a `comm` fixture; lists of nprocs, transports or providers parametrize the test.",
    )
    config.stash[_manager_key] = Manager(config)


def pytest_unconfigure(config: pytest.Config) -> None:
    manager = config.stash.get(_manager_key, None)
    if manager is not None:
        del config.stash[_manager_key]
        manager.shutdown()


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    marker = metafunc.definition.get_closest_marker("rma")
    if marker is None:
        return
    spec = parse_marker(marker, metafunc.definition.nodeid)
    if not (spec.nprocs_listed or spec.variants_listed):
        return  # a single configuration needs no parameter and gets no id
    values, ids = [], []
    for variant, variant_id in zip(spec.variants, spec.ids or [""] * len(spec.variants)):
        for nprocs in spec.nprocs:
            values.append((nprocs, variant))
            # Ids -k accepts (it takes no "="): test_ring[libfabric-tcp-nprocs2].
            ids.append("-".join(filter(None, [variant_id, f"nprocs{nprocs}" if spec.nprocs_listed else ""])))
    metafunc.parametrize(PARAM, values, ids=ids)


@pytest.fixture(scope="session", autouse=True, name=PARAM)
def _rma_params_fixture():
    """Carry the (nprocs, variant) parameter of rma tests (overridden by parametrization).

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
            f"{request.node.nodeid}: the `comm` fixture needs the test to be marked @pytest.mark.rma(nprocs=...)",
            pytrace=False,
        )
    return _RankSideOnly()


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("rma_keep_order"):
        return
    group_by_pool(items)


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function):
    marker = pyfuncitem.get_closest_marker("rma")
    if marker is None:
        return None
    pyfuncitem.config.stash[_manager_key].run_item(pyfuncitem, marker)
    return True
