"""MPI.Grequest of the mpi4py facade: a generalized request, an operation the program carries
out itself (in a thread of its own, say) and completes with Complete(). Waiting for it returns
once Complete() was called; its query function then fills the status and its free function
runs, as MPI_Grequest_start's do. Its cancel function runs on Cancel(), told whether the
operation is complete."""

from __future__ import annotations

import functools
import threading
import time
from typing import Any

from .._job import settings
from .constants import ANY_SOURCE, ANY_TAG
from .errors import ERR_OTHER, run_callback
from .errors import Exception as MPIException
from .requests import Request, Status

__all__ = ["Grequest"]

# Seconds between looks at the deadline while a wait sleeps on Complete().
_LOOK = 0.1


class _Generalized:
    """The operation underneath a Grequest: done once Complete() is called."""

    def __init__(self, query_fn: Any, free_fn: Any, cancel_fn: Any, args: tuple, kwargs: dict) -> None:
        self._query, self._free, self._cancel = query_fn, free_fn, cancel_fn
        self._args, self._kwargs = args, kwargs
        self._completed = threading.Event()
        self.status = (ANY_SOURCE, ANY_TAG, 0, False)  # (the empty status, unless a query fills it)
        self.value: Any = None  # what the lowercase wait() returns (Grequest.complete's obj)

    def complete(self, value: Any) -> None:
        self.value = value
        self._completed.set()

    def test(self) -> bool:
        return self._completed.is_set()

    def wait(self) -> Any:
        # Another thread may call Complete(): sleep on it, up to rma's deadline (RMA_TIMEOUT).
        limit = settings.timeout()
        deadline = time.monotonic() + limit if limit > 0 else None
        while not self._completed.wait(_LOOK):
            if deadline is not None and time.monotonic() > deadline:
                raise MPIException(
                    ERR_OTHER, f"rma.compat: Grequest.Wait: Complete() was not called within {limit:g} s (RMA_TIMEOUT)"
                )
        self._finish()
        return self.value

    def _finish(self) -> None:
        """The query function fills the status, then the free function runs (both, even when
        the query fails; the first failure is raised)."""
        failure = None
        if self._query is not None:
            status = Status()
            try:
                self._call(self._query, status, "query")
                self.status = (status.source, status.tag, status.count, status.cancelled)
            except MPIException as exc:
                failure = exc
        if self._free is not None:
            try:
                self._call(self._free, None, "free")
            except MPIException as exc:
                failure = failure or exc
        if failure is not None:
            raise failure

    def cancel(self) -> None:
        if self._cancel is not None:
            self._call(self._cancel, self._completed.is_set(), "cancel")

    def _call(self, function: Any, first: Any, what: str) -> None:
        args = self._args if first is None else (first, *self._args)
        run_callback(functools.partial(function, **self._kwargs), args, f"Grequest's {what} function")


class Grequest(Request):
    """A generalized request (MPI_Grequest_start): see the module's docstring."""

    __slots__ = ()

    def __init__(self, request: Request | None = None) -> None:
        if request is not None and not isinstance(request, Grequest):
            raise TypeError(f"MPI.Grequest() takes an MPI.Grequest, not {type(request).__name__}")
        super().__init__(request)

    @classmethod
    def Start(  # noqa: N802 - mpi4py's names
        cls,
        query_fn: Any = None,
        free_fn: Any = None,
        cancel_fn: Any = None,
        args: tuple | None = None,
        kwargs: dict | None = None,
    ) -> Grequest:
        """Start an operation the program carries out: query_fn(status, *args, **kwargs) fills
        the status when it completes, free_fn(*args, **kwargs) runs then, and
        cancel_fn(completed, *args, **kwargs) on Cancel()."""
        operation = _Generalized(query_fn, free_fn, cancel_fn, tuple(args or ()), dict(kwargs or {}))
        return cls._running(operation)

    def Complete(self) -> None:  # noqa: N802
        """Tell that the operation is done: a wait for it returns."""
        self.complete(None)

    def complete(self, obj: Any = None) -> None:
        """Complete(), with `obj` as what the lowercase wait() returns."""
        state = self._state
        if state is None or not isinstance(state.operation, _Generalized):
            raise MPIException(ERR_OTHER, "rma.compat: Grequest.complete: the request is MPI.REQUEST_NULL")
        state.operation.complete(obj)
