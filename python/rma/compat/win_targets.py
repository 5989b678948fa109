"""What MPI.Win's communication calls are given, as the rma calls they make (python/rma/compat/win.py).

A target specification (`disp`, `(disp, count)` or `(disp, count, datatype)`, a derived
datatype too) becomes one rma call per contiguous run of the target's layout, all in the same
epoch, at byte displacements (the windows underneath count bytes); the request-based calls
return the requests of all those runs as one.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .buffers import origin_elements, result_elements
from .datatypes import Datatype
from .errors import ERR_ARG, ERR_RMA_RANGE, ArgumentError
from .errors import Exception as MPIException
from .ops import Op
from .requests import Request

__all__ = ["runs", "origin_and_result", "one_each", "together"]


def runs(win: Any, rank: int, target: Any, data: np.ndarray, call: str) -> list[tuple[int, int, int]]:
    """The rma calls a target specification makes on `win` (an MPI.Win): (first element of data,
    elements, byte displacement) for each contiguous run of the target's layout."""
    disp, count, datatype = _target(target, call)
    base = win._byte_disp(rank, disp)
    if datatype is None:
        count = data.size if count is None else count
        if count != data.size:
            raise MPIException(
                ERR_ARG, f"rma.compat: Win.{call}: the target holds {count} elements, the origin {data.size}"
            )
        return [(0, data.size, base)]
    count = 1 if count is None else count
    made, first = [], 0
    size, itemsize = datatype.basic.itemsize, data.dtype.itemsize
    for offset, elements in datatype.blocks(count):
        nbytes = elements * size
        if nbytes % itemsize:
            raise MPIException(
                ERR_ARG, f"rma.compat: Win.{call}: the target datatype's runs do not hold whole origin elements"
            )
        made.append((first, nbytes // itemsize, base + offset))
        first += nbytes // itemsize
    if first != data.size:
        raise MPIException(
            ERR_ARG,
            f"rma.compat: Win.{call}: the target datatype holds {first} origin elements, the origin {data.size}",
        )
    if any(disp < 0 for _, _, disp in made):
        raise MPIException(ERR_RMA_RANGE, f"rma.compat: Win.{call}: the target lies before the window's start")
    return made


def _target(target: Any, call: str) -> tuple[int, int | None, Datatype | None]:
    """(displacement, count, datatype) of a target specification: None, disp, or a sequence
    (disp,), (disp, count) or (disp, count, datatype)."""
    if target is None:
        return 0, None, None
    if isinstance(target, (list, tuple)):
        items = list(target) + [None] * (3 - len(target))
        if len(target) > 3:
            raise MPIException(ERR_ARG, f"rma.compat: Win.{call}: a target is (disp, count, datatype), not {target!r}")
        disp, count, datatype = items
        disp = 0 if disp is None else disp
        if isinstance(datatype, str):
            datatype = Datatype.fromcode(datatype)
        return int(disp), None if count is None else int(count), datatype
    return int(target), None, None


def origin_and_result(origin: Any, result: Any, op: Op, call: str) -> tuple[np.ndarray, np.ndarray]:
    """The origin and result buffers of a fetching call as arrays (NO_OP reads no origin)."""
    into = result_elements(result, f"Win.{call}")
    if origin is None or (op is not None and op._name == "MPI_NO_OP" and _empty_spec(origin)):
        return np.zeros_like(into), into
    return origin_elements(origin, f"Win.{call}"), into


def one_each(call: str, *buffers: np.ndarray) -> None:
    """Fetch_and_op and Compare_and_swap move one element: each buffer holds one, of one type."""
    dtype = buffers[0].dtype
    for buffer_ in buffers:
        if buffer_.size != 1 or buffer_.dtype != dtype:
            described = ", ".join(f"{b.size} x {b.dtype}" for b in buffers)
            raise ArgumentError(
                f"rma.compat: Win.{call}: each buffer must hold one element of the same datatype, not {described}"
            )


def _empty_spec(spec: Any) -> bool:
    try:
        return origin_elements(spec, "Win").size == 0
    except MPIException:
        return True


class _Together:
    """Several window requests as one (a target datatype with several runs)."""

    def __init__(self, requests: list[Any]) -> None:
        self._requests = requests

    def wait(self) -> None:
        for request in self._requests:
            request.wait()

    def test(self) -> bool:
        return all([request.test() for request in self._requests])


def together(requests: Any) -> Request:
    """The MPI request of the window requests of a call's runs."""
    made = list(requests)
    return Request._of(made[0] if len(made) == 1 else _Together(made), message=False)
