"""The rma marker: its arguments, checked, and the rank count and provider an item asks for."""

from __future__ import annotations

from typing import NamedTuple

import pytest

__all__ = ["PARAM", "Spec", "parse_marker", "item_request"]

# The hidden fixture that carries (nprocs, provider) of a parametrized rma test.
PARAM = "_rma_params"
_MARKER_KEYWORDS = ("nprocs", "providers", "timeout")


class Spec(NamedTuple):
    nprocs: list[int]
    nprocs_listed: bool
    providers: list[str | None]
    providers_listed: bool
    timeout: float | None


def _bad_marker(where: str, problem: str):
    pytest.fail(f"{where}: @pytest.mark.rma: {problem}", pytrace=False)


def parse_marker(marker: pytest.Mark, where: str) -> Spec:
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
    return Spec(sizes, nprocs_listed, names, providers_listed, None if timeout is None else float(timeout))


def item_request(item: pytest.Item, marker: pytest.Mark) -> tuple[int, str | None, Spec]:
    """Return (nprocs, provider as marked, spec) of an rma item."""
    spec = parse_marker(marker, item.nodeid)
    callspec = getattr(item, "callspec", None)
    if callspec is not None and PARAM in callspec.params:
        nprocs, provider = callspec.params[PARAM]
    else:
        nprocs, provider = spec.nprocs[0], spec.providers[0]
    return nprocs, provider, spec
