"""Run the rma tests that use the same pool of ranks one after another."""

from __future__ import annotations

import pytest

from .marker import item_request

__all__ = ["group_by_pool"]


def group_by_pool(items: list[pytest.Item]) -> None:
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
            nprocs, variant, _ = item_request(item, marker)
            keys.append((nprocs, variant))
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
