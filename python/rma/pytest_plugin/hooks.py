"""Hooks a conftest.py may implement to start the plugin's ranks somewhere else than here.

rma's own suite implements them to place ranks on the hosts of its test bed (tests/conftest.py,
``--testbed-hosts``); a site could place them on other machines through a remote shell the
same way.
"""

from __future__ import annotations

import pytest


@pytest.hookspec(firstresult=True)
def pytest_rma_rank_command(
    config: pytest.Config, rank: int, size: int, argv: list[str], env: dict[str, str]
) -> list[str] | None:
    """Return the command line that starts rank `rank` of a pool of `size` ranks, or None for
    argv itself (the rank runs here). env is the environment the rank gets (its RMA_RANK,
    RMA_STORE, RMA_TRANSPORT...); the hook may change it.

    argv starts the worker on this machine (the pytest process's interpreter). A returned
    command must run it with the environment and open descriptors it is given, and its process
    group must hold the worker (the plugin stops a pool with killpg); the worker must be its
    only child (its stack dump is asked for by a signal to that child).
    """


@pytest.hookspec(firstresult=True)
def pytest_rma_store_host(config: pytest.Config) -> str | None:
    """Return the address the pools' rendezvous stores listen on, where every rank reaches them
    (None: loopback)."""
