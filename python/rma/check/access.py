"""What one RMA call touched at its target, and the rule that says when two accesses conflict.

spec/002: it is erroneous to have concurrent conflicting accesses to the same memory location
of a window. Two accesses to overlapping bytes conflict when at least one is a put; when a get
meets an accumulate that updates; when two updating accumulates differ in op or in dtype
(concurrent accumulates are atomic per element only with the same op and basic dtype). Reads
never conflict with reads: a get, or an accumulate with NO_OP (get_accumulate, fetch_and_op).
Two accumulates of one origin to one target are ordered (MPI's default accumulate_ordering), so
they never conflict; its other accesses conflict until a completing call orders them.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["Access", "conflict", "overlap", "ordered", "describe", "strided_spans", "NOT_DONE"]

# The ticks and publications of an access not completed yet: later than anything.
NOT_DONE = 1 << 62

# Kinds of access.
WRITE = "write"  # put
READ = "read"  # get
UPDATE = "update"  # an accumulate that changes memory
ATOMIC_READ = "atomic read"  # an accumulate with NO_OP


class Access(NamedTuple):
    origin: int  # world rank of the origin
    origin_rank: int  # its rank in the window's communicator
    target_rank: int  # the target's rank in the window's communicator
    call: str  # "win.put"...
    kind: str  # WRITE, READ, UPDATE or ATOMIC_READ
    op: str  # the accumulate's op ("SUM", "CAS"...), "" for put and get
    dtype: str  # the element type of an accumulate, "" for put and get
    spans: tuple[tuple[int, int], ...]  # [start, stop) byte ranges at the target, sorted, disjoint
    clock: tuple[int, ...]  # the origin's vector clock at the call
    tick: int  # the origin's call count at the call (program order)
    done_tick: int  # the origin's call count at the call that completed it at the target
    done: int  # the origin's clock entry that first made its completion known
    site: str  # "file.py:12"
    epoch: str  # "fence epoch 2", "lock epoch 1 on rank 0"...


def strided_spans(start: int, itemsize: int, dims: list[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    """Return the sorted, merged [start, stop) byte ranges of the elements at `start` plus every
    combination of (index * stride) over `dims`, a list of (count, stride)."""
    offsets = np.full(1, start, dtype=np.int64)
    for count, stride in dims:
        offsets = (offsets[:, None] + np.arange(count, dtype=np.int64)[None, :] * stride).ravel()
    offsets.sort()
    spans: list[list[int]] = []
    for offset in offsets.tolist():
        if spans and offset <= spans[-1][1]:
            spans[-1][1] = max(spans[-1][1], offset + itemsize)
        else:
            spans.append([offset, offset + itemsize])
    return tuple((a, b) for a, b in spans)


def overlap(a: tuple[tuple[int, int], ...], b: tuple[tuple[int, int], ...]) -> tuple[int, int] | None:
    """Return the first [start, stop) byte range two sorted span lists share, or None."""
    i = j = 0
    while i < len(a) and j < len(b):
        start = max(a[i][0], b[j][0])
        stop = min(a[i][1], b[j][1])
        if start < stop:
            return start, stop
        if a[i][1] <= b[j][1]:
            i += 1
        else:
            j += 1
    return None


def conflict(a: Access, b: Access) -> str | None:
    """Return why two accesses to overlapping bytes conflict if they are concurrent, or None."""
    kinds = {a.kind, b.kind}
    if kinds <= {READ, ATOMIC_READ}:
        return None
    if WRITE in kinds:
        return "a put conflicts with every other access to the same bytes"
    if READ in kinds:  # a get meets an accumulate that updates
        return "a get conflicts with an accumulate that updates the same bytes"
    if a.origin == b.origin:  # accumulates of one origin are ordered
        return None
    if a.dtype != b.dtype:
        return f"accumulates of different dtypes ({a.dtype}, {b.dtype}) are not atomic with each other"
    if UPDATE in kinds and ATOMIC_READ in kinds:
        return None
    if a.op != b.op:
        return f"accumulates with different ops ({a.op}, {b.op}) are not atomic with each other"
    return None


def ordered(first: Access, second: Access) -> bool:
    """Return whether `first` completed at its target before `second` was made."""
    if first.origin == second.origin:
        return first.done_tick < second.tick
    return second.clock[first.origin] >= first.done


def describe(access: Access) -> str:
    """Name an access for a message: the call, its ranks, bytes, epoch and source line."""
    start, stop = access.spans[0][0], access.spans[-1][1]
    op = f" ({access.op})" if access.op else ""
    whose = (
        f"rank {access.origin_rank}"
        if access.call.endswith("win.local")
        else (f"rank {access.origin_rank} to rank {access.target_rank}")
    )
    return f"{access.call}{op} by {whose}, bytes {start}-{stop - 1}, in its {access.epoch}, at {access.site}"
