"""The suite's own options.

``--testbed-hosts N`` runs the ranks of every @pytest.mark.rma test across N hosts of a test
bed (tests/testbed.py: namespaces joined by a bridge) instead of on this machine: ranks are
spread in consecutive blocks over the hosts (2 hosts, 4 ranks: 0 0 1 1), the pools' stores
listen on the bridge, and a test's "shared-memory" variant runs with RMA_TRANSPORT=auto (shared
memory among the ranks of each host, libfabric between hosts). ./dev.sh test runs the
cross-host suites so at 2 hosts (x 2 ranks at 4 ranks) and 3 hosts (x 1 rank at 3 ranks).
Tests not marked rma (those that start their own processes) are left out then: nothing of
theirs moves to the test bed. ``--testbed-spanning`` also leaves out the variants of fewer ranks
than hosts, which place their ranks as on a smaller test bed. Where no test bed can be made (not
root, namespaces refused), the session stops with the reason (`python tests/testbed.py` tells
beforehand).
"""

from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))  # testbed.py, for the tests that make hosts themselves

from rma.pytest_plugin.marker import PARAM, item_request  # noqa: E402
from testbed import TestBed, TestBedError  # noqa: E402

_bed_key = pytest.StashKey[TestBed]()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--testbed-hosts",
        type=int,
        default=0,
        metavar="N",
        help="run the ranks of rma tests across N hosts of a namespace test bed (needs root)",
    )
    parser.addoption(
        "--testbed-spanning",
        action="store_true",
        help="with --testbed-hosts N: only the variants of N ranks or more, whose ranks reach every host",
    )
    parser.addoption(
        "--wheel",
        default="",
        metavar="PATH",
        help="tests/test_wheel.py: the wheel to install and test (./dev.sh wheel builds dist/rma-*.whl)",
    )
    parser.addoption(
        "--rma-size-sample",
        action="store_true",
        help="of a test run at several rank counts, only the largest and one other, taken in turn",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "racy: the test makes conflicting accesses on purpose, which RMA_CHECK rightly reports; "
        "the suite's pass under RMA_CHECK=1 (./dev.sh test) leaves it out",
    )
    config.addinivalue_line(
        "markers",
        "slow: the test takes seconds (deadlines, contention, idle measures); ./dev.sh check leaves it out",
    )
    hosts = config.getoption("testbed_hosts")
    if hosts:
        try:
            config.stash[_bed_key] = TestBed(hosts)
        except TestBedError as exc:
            raise pytest.UsageError(f"--testbed-hosts {hosts}: {exc}") from None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    keep = _placed_on_the_test_bed(config, items)
    if config.getoption("rma_size_sample"):
        keep &= _sampled_sizes(items)
    left_out = [item for item in items if item not in keep]
    if left_out:
        config.hook.pytest_deselected(items=left_out)
        items[:] = [item for item in items if item in keep]


def _placed_on_the_test_bed(config: pytest.Config, items: list[pytest.Item]) -> set[pytest.Item]:
    """Without a test bed, every test; with one, the rma tests (their ranks move to the hosts),
    and under --testbed-spanning only their variants of as many ranks as hosts or more (fewer
    place their ranks as a smaller test bed does: ./dev.sh test runs those on its bed of 2)."""
    bed = config.stash.get(_bed_key, None)
    if bed is None:
        return set(items)
    least = len(bed.hosts) if config.getoption("testbed_spanning") else 1
    return {
        item
        for item in items
        if (marker := item.get_closest_marker("rma")) is not None and item_request(item, marker)[0] >= least
    }


def _sampled_sizes(items: list[pytest.Item]) -> set[pytest.Item]:
    """--rma-size-sample: of each test run at several rank counts (the same function, data path
    and other parameters), its largest count and one other, the other taken in turn from test
    to test, so that every count still runs in some tests. A test's rank count is its rma
    marker's, or else its own parameter `size` (the tests that start jobs by hand: the checker's,
    the dead peers', the hostile processes'). (The ASan pass: its question is memory, which the
    code paths answer more than the rank counts.)"""
    groups: dict[tuple, list[tuple[int, pytest.Item]]] = {}
    kept = set()
    for item in items:
        marker = item.get_closest_marker("rma")
        params = getattr(getattr(item, "callspec", None), "params", {})
        if marker is not None:
            nprocs, variant, _ = item_request(item, marker)
            counted = PARAM
        elif isinstance(params.get("size"), int):
            nprocs, variant, counted = params["size"], None, "size"
        else:
            kept.add(item)
            continue
        others = repr(sorted((k, repr(v)) for k, v in params.items() if k != counted))
        groups.setdefault((item.module.__name__, item.originalname, variant, others), []).append((nprocs, item))
    for turn, members in enumerate(groups.values()):
        sizes = sorted({nprocs for nprocs, _ in members})
        chosen = {sizes[-1]} if len(sizes) == 1 else {sizes[-1], sizes[turn % (len(sizes) - 1)]}
        kept.update(item for nprocs, item in members if nprocs in chosen)
    return kept


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    # After rma's plugin has ended its pools (trylast): ending the hosts kills what is left.
    bed = config.stash.get(_bed_key, None)
    if bed is not None:
        bed.close()


def pytest_report_header(config: pytest.Config) -> str | None:
    bed = config.stash.get(_bed_key, None)
    if bed is None:
        return None
    return "rma test bed: " + ", ".join(f"{h.name} ({h.address})" for h in bed.hosts)


def pytest_rma_rank_command(
    config: pytest.Config, rank: int, size: int, argv: list[str], env: dict[str, str]
) -> list[str] | None:
    bed = config.stash.get(_bed_key, None)
    if bed is None:
        return None
    if env.get("RMA_TRANSPORT") == "shared-memory":
        # Across hosts, the shared-memory data path is the one each rank takes to the ranks of
        # its own host, with libfabric to the others: what RMA_TRANSPORT=auto does (mixed
        # windows). (shared-memory itself forces it for every peer, which hosts cannot.)
        env["RMA_TRANSPORT"] = "auto"
    return bed.host_of(rank, size).command(argv)


def pytest_rma_store_host(config: pytest.Config) -> str | None:
    bed = config.stash.get(_bed_key, None)
    return bed.switch_address if bed is not None else None
