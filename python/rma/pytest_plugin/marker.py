"""The rma marker: its arguments, checked, and the pool (ranks, data path) an item asks for."""

from __future__ import annotations

from typing import NamedTuple

import pytest

__all__ = ["PARAM", "Spec", "Variant", "parse_marker", "item_request"]

# The hidden fixture that carries (nprocs, variant) of a parametrized rma test.
PARAM = "_rma_params"
_MARKER_KEYWORDS = ("nprocs", "transports", "providers", "timeout")
_TRANSPORTS = ("shared-memory", "libfabric")


class Variant(NamedTuple):
    """The data path of a pool: the ranks' RMA_TRANSPORT and RMA_PROVIDER (None: the environment's)."""

    transport: str | None
    provider: str | None

    def describe(self) -> str:
        """Say it for a message: "" for the environment's choice, else ' through libfabric (tcp)'."""
        if self.transport is None and self.provider is None:
            return ""
        through = self.transport or "the default transport"
        return f" through {through}" + (f" (provider {self.provider})" if self.provider else "")


class Spec(NamedTuple):
    nprocs: list[int]
    nprocs_listed: bool
    variants: list[Variant]
    variants_listed: bool
    ids: list[str]  # one per variant; [] when not listed
    timeout: float | None


def _bad_marker(where: str, problem: str):
    pytest.fail(f"{where}: @pytest.mark.rma: {problem}", pytrace=False)


def _names(kwargs: dict, key: str, where: str, what: str) -> tuple[list, bool]:
    """Return (names, listed) of a keyword that takes a name or a list of names."""
    value = kwargs.get(key)
    listed = isinstance(value, (list, tuple))
    names = list(value) if listed else [value]
    if not names:
        _bad_marker(where, f"{key} is an empty list")
    for name in names:
        if not (isinstance(name, str) and name.strip() != "" or (name is None and not listed)):
            _bad_marker(where, f"{key} must be {what} or a list of them, not {name!r}")
    return names, listed


def _variants(kwargs: dict, where: str) -> tuple[list[Variant], list[str]]:
    """The data paths a marker asks for, and their ids when it lists several.

    A provider is libfabric's: naming one means the data goes through libfabric (on one host
    the automatic choice would otherwise be shared memory, which no provider carries).
    """
    transports, transports_listed = _names(kwargs, "transports", where, '"shared-memory" or "libfabric"')
    for name in transports:
        if name is not None and name not in _TRANSPORTS:
            _bad_marker(where, f'transports must be "shared-memory" or "libfabric" (or a list of them), not {name!r}')
    providers, providers_listed = _names(kwargs, "providers", where, 'a libfabric provider name ("shm", "tcp")')
    if providers != [None] and "libfabric" not in transports:
        if transports != [None]:
            _bad_marker(where, 'providers are libfabric\'s: add "libfabric" to transports, or leave providers out')
        transports = ["libfabric"]
    variants, ids = [], []
    for transport in transports:
        # Only libfabric takes a provider: shared memory is one variant however many are listed.
        for provider in providers if transport == "libfabric" else [None]:
            variants.append(Variant(transport, provider))
            # Words that -k accepts (no "="): "shared-memory", "libfabric-tcp", "tcp".
            words = [transport] if transports_listed else []
            words += [provider] if providers_listed and provider is not None else []
            ids.append("-".join(words))
    if not (transports_listed or providers_listed):
        ids = []
    return variants, ids


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

    variants, ids = _variants(kwargs, where)

    timeout = kwargs.get("timeout")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0):
        _bad_marker(where, f"timeout must be a positive number of seconds, not {timeout!r}")
    return Spec(sizes, nprocs_listed, variants, bool(ids), ids, None if timeout is None else float(timeout))


def item_request(item: pytest.Item, marker: pytest.Mark) -> tuple[int, Variant, Spec]:
    """Return (nprocs, variant, spec) of an rma item."""
    spec = parse_marker(marker, item.nodeid)
    callspec = getattr(item, "callspec", None)
    if callspec is not None and PARAM in callspec.params:
        nprocs, variant = callspec.params[PARAM]
    else:
        nprocs, variant = spec.nprocs[0], spec.variants[0]
    return nprocs, variant, spec
