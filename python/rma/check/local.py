"""The owner's loads and stores of `win.local` under RMA_CHECK, seen without changing user code.

A checked window's `win.local` is a `WatchedArray`: the same memory, as an ndarray subclass
whose indexing, ufuncs (`+=` included), NumPy functions and common methods tell the window
which bytes they read or wrote, and from which line. The window records them as accesses of
this rank to itself, completed at once, which its journal compares with the remote accesses
by spec/002's rules (a store is a put, a load a get). Views of it (`win.local[2:5]`) are
watched too; what leaves NumPy (`memoryview`, `ctypes`, an array made with `np.asarray`, the
array given to `Window.create` itself) is not. Results of operations are plain arrays.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._native import _core

__all__ = ["WatchedArray", "spans_of"]

# Past this many elements, a strided view counts as the bytes from its first to its last.
_EXACT_ELEMENTS = 1 << 16


def spans_of(array: np.ndarray, base: int) -> tuple[tuple[int, int], ...]:
    """Return the sorted byte ranges of `array`, relative to the address `base`."""
    start = array.__array_interface__["data"][0] - base
    if array.size == 0:
        return ()
    if array.flags.c_contiguous or array.flags.f_contiguous:
        return ((start, start + array.nbytes),)
    if array.size > _EXACT_ELEMENTS or any(stride < 0 for stride in array.strides):
        low = start + sum(min(0, (n - 1) * s) for n, s in zip(array.shape, array.strides))
        high = start + sum(max(0, (n - 1) * s) for n, s in zip(array.shape, array.strides)) + array.itemsize
        return ((low, high),)
    return tuple(_core.check_strided_spans(start, array.itemsize, list(zip(array.shape, array.strides))))


def _plain(value: Any) -> Any:
    return value.view(np.ndarray) if isinstance(value, WatchedArray) else value


class WatchedArray(np.ndarray):
    """`win.local` of a checked window: an ndarray that reports its loads and stores."""

    _watcher: Any = None  # the window's checker: watcher._local_access(kind, array)

    def __array_finalize__(self, obj: Any) -> None:
        self._watcher = getattr(obj, "_watcher", None)

    def _seen(self, kind: str, array: np.ndarray | None = None) -> None:
        if self._watcher is not None:
            self._watcher._local_access(kind, self if array is None else array)

    def __getitem__(self, key: Any) -> Any:
        plain = self.view(np.ndarray)
        result = plain[key]
        if isinstance(result, np.ndarray):
            if np.shares_memory(result, plain):  # a view: nothing read yet
                view = result.view(WatchedArray)
                view._watcher = self._watcher
                return view
            self._seen("load")  # a copy (fancy index): read whatever it may have read
            return result
        self._seen("load", _element_view(plain, key))
        return result

    def __setitem__(self, key: Any, value: Any) -> None:
        plain = self.view(np.ndarray)
        try:
            written = plain[key]
            where = written if isinstance(written, np.ndarray) and np.shares_memory(written, plain) else None
        except (IndexError, TypeError, ValueError):
            where = None
        if where is None:
            where = _element_view(plain, key) if not _is_fancy(key) else plain
        self._seen("store", where)
        plain[key] = _plain(value)

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        for item in inputs:
            if isinstance(item, WatchedArray):
                item._seen("load")
        outputs = kwargs.get("out")
        if outputs:
            for item in outputs:
                if isinstance(item, WatchedArray):
                    item._seen("store")
            kwargs["out"] = tuple(_plain(item) for item in outputs)
        result = getattr(ufunc, method)(*(_plain(item) for item in inputs), **kwargs)
        if outputs and len(outputs) == 1 and isinstance(outputs[0], WatchedArray):
            return outputs[0]
        return result

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        for item in (*args, *kwargs.values()):
            for array in item if isinstance(item, (list, tuple)) else (item,):
                if isinstance(array, WatchedArray):
                    array._seen("load")
        unwrap = lambda item: [_plain(x) for x in item] if isinstance(item, list) else _plain(item)  # noqa: E731
        args = tuple(tuple(unwrap(list(item))) if isinstance(item, tuple) else unwrap(item) for item in args)
        return func(*args, **{name: unwrap(value) for name, value in kwargs.items()})

    # Methods that read or write without a ufunc or a NumPy function.
    def __repr__(self) -> str:
        self._seen("load")
        return repr(self.view(np.ndarray))

    def __str__(self) -> str:
        self._seen("load")
        return str(self.view(np.ndarray))

    def tolist(self) -> Any:
        self._seen("load")
        return self.view(np.ndarray).tolist()

    def item(self, *args: Any) -> Any:
        self._seen("load")
        return self.view(np.ndarray).item(*args)

    def copy(self, order: str = "C") -> np.ndarray:
        self._seen("load")
        return self.view(np.ndarray).copy(order)

    def tobytes(self, order: str = "C") -> bytes:
        self._seen("load")
        return self.view(np.ndarray).tobytes(order)

    def astype(self, *args: Any, **kwargs: Any) -> np.ndarray:
        self._seen("load")
        return self.view(np.ndarray).astype(*args, **kwargs)

    def fill(self, value: Any) -> None:
        self._seen("store")
        self.view(np.ndarray).fill(value)

    def __iter__(self) -> Any:
        self._seen("load")
        return iter(self.view(np.ndarray))

    def __reduce__(self) -> Any:
        self._seen("load")
        return self.view(np.ndarray).__reduce__()


def _is_fancy(key: Any) -> bool:
    keys = key if isinstance(key, tuple) else (key,)
    return any(isinstance(k, (list, np.ndarray)) for k in keys)


def _element_view(plain: np.ndarray, key: Any) -> np.ndarray:
    """The bytes one element (or a fancy selection) reads: a view where NumPy gives one."""
    if _is_fancy(key):
        return plain
    keys = key if isinstance(key, tuple) else (key,)
    try:
        # An integer index of each dimension: the element as a 0-d view (its address).
        return plain[tuple(k if isinstance(k, slice) else slice(k, None if k == -1 else k + 1) for k in keys)]
    except (TypeError, IndexError):
        return plain
