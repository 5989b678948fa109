"""The vector clock the facade's messages carry under RMA_CHECK (rma/check/): a receive takes
in what its sender's clock knew, so the checker sees the order a message makes between ranks.

rma.Comm's object calls carry it already (rma/check/comm.py sends (clock, object)); the
facade's own messages are raw bytes (Send, Ssend, ...) and pickles it makes itself (ssend,
issend), so it stamps them here: a raw message ends with the clock (int64 entries) and their
number (uint32); an object is sent as (clock, object), as rma.Comm's are. Off (the default),
every function here hands its data through untouched."""

from __future__ import annotations

import struct
from typing import Any

import numpy as np

from .._native import _core
from ..check import clock

__all__ = ["checking", "wrap_object", "unwrap_object", "stamped", "unstamped", "payload_bytes"]

_COUNT = struct.Struct("<I")


def checking() -> bool:
    """Whether the checker runs (RMA_CHECK), so that messages carry the clock."""
    return bool(_core.check_clock_running())


def wrap_object(obj: Any) -> Any:
    """An object to pickle for a message: with the clock when the checker runs."""
    return (clock.publish(), obj) if checking() else obj


def unwrap_object(obj: Any) -> Any:
    """A received object: its clock taken in (when the checker runs) and the object returned."""
    if not checking() or obj is None:
        return obj
    carried, obj = obj
    clock.merge(carried)
    return obj


def stamped(data: memoryview) -> memoryview | bytes:
    """A raw message's bytes: followed by the clock when the checker runs."""
    if not checking():
        return data
    now = np.asarray(clock.publish(), dtype=np.int64)
    return b"".join((data, now.tobytes(), _COUNT.pack(len(now))))


def unstamped(data: bytes) -> memoryview | bytes:
    """A received raw message's own bytes, its clock taken in when the checker runs."""
    if not checking():
        return data
    (entries,) = _COUNT.unpack_from(data, len(data) - _COUNT.size)
    start = len(data) - _COUNT.size - 8 * entries
    clock.merge(np.frombuffer(data, dtype=np.int64, count=entries, offset=start).tolist())
    return memoryview(data)[:start]


def payload_bytes(size: int) -> int:
    """The bytes of a raw message's own data, of the `size` that came (a probe's count)."""
    return size - _COUNT.size - 8 * len(clock.now()) if checking() else size
