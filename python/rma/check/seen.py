"""An ndarray that tells which of its bytes each use reads or writes, and from which line.

`SeenArray` is the common part of the checker's two watched arrays: `win.local` of a checked
window (local.py's `WatchedArray`, whose loads and stores are accesses to the window) and a
result array whose call has not completed (pending.py's `PendingArray`, which must not be read
yet). Its indexing, ufuncs (`+=` included), NumPy functions and common methods call
`self._seen(kind, array)` with "load" or "store" and the part touched, then do the plain
ndarray's work; what leaves NumPy (`memoryview`, `ctypes`, `np.asarray`, a C extension's
buffer) is not seen. Views of a seen array are seen too (`_adopt`); results of operations are
plain arrays.

A class defined in Python is always collected by the garbage collector, so its instances
carry a header a plain ndarray lacks, and an array's class cannot be changed to it in place.
`PendingArray` is therefore made in C with ndarray's exact layout (src/bindings/pending_arrays.hpp)
and given these hooks by `install`; `is_seen` knows both kinds.
"""

from __future__ import annotations

import types
from typing import Any

import numpy as np

__all__ = ["SeenArray", "install", "is_seen", "plain"]


def is_seen(value: Any) -> bool:
    """Whether `value` is an array whose loads and stores are seen."""
    return isinstance(value, _SEEN)


def plain(value: Any) -> Any:
    """`value` as a plain ndarray if it is a seen one (the same memory), else `value`."""
    return value.view(np.ndarray) if isinstance(value, _SEEN) else value


def install(cls: type) -> None:
    """Give `cls`, an ndarray subclass made in C, SeenArray's hooks (all but `_seen`, its own)."""
    global _SEEN
    for name, value in vars(SeenArray).items():
        if isinstance(value, types.FunctionType) and name != "_seen":
            setattr(cls, name, value)
    _SEEN = (*_SEEN, cls)


class SeenArray(np.ndarray):
    """An ndarray whose loads and stores call `_seen` first."""

    def _seen(self, kind: str, array: np.ndarray | None = None) -> None:
        """`kind` ("load" or "store") of `array` (a part of this one; None: all of it)."""
        raise NotImplementedError

    def _adopt(self, view: Any) -> Any:
        """A view of this array, seen as this one is."""
        return view

    def __getitem__(self, key: Any) -> Any:
        base = self.view(np.ndarray)
        result = base[key]
        if isinstance(result, np.ndarray):
            if np.shares_memory(result, base):  # a view: nothing read yet
                return self._adopt(result.view(type(self)))
            self._seen("load")  # a copy (fancy index): read whatever it may have read
            return result
        self._seen("load", _element_view(base, key))
        return result

    def __setitem__(self, key: Any, value: Any) -> None:
        base = self.view(np.ndarray)
        try:
            written = base[key]
            where = written if isinstance(written, np.ndarray) and np.shares_memory(written, base) else None
        except (IndexError, TypeError, ValueError):
            where = None
        if where is None:
            where = _element_view(base, key) if not _is_fancy(key) else base
        self._seen("store", where)
        base[key] = plain(value)

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        for item in inputs:
            if is_seen(item):
                item._seen("load")
        outputs = kwargs.get("out")
        if outputs:
            for item in outputs:
                if is_seen(item):
                    item._seen("store")
            kwargs["out"] = tuple(plain(item) for item in outputs)
        result = getattr(ufunc, method)(*(plain(item) for item in inputs), **kwargs)
        if outputs and len(outputs) == 1 and is_seen(outputs[0]):
            return outputs[0]
        return result

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        for item in (*args, *kwargs.values()):
            for array in item if isinstance(item, (list, tuple)) else (item,):
                if is_seen(array):
                    array._seen("load")
        unwrap = lambda item: [plain(x) for x in item] if isinstance(item, list) else plain(item)  # noqa: E731
        args = tuple(tuple(unwrap(list(item))) if isinstance(item, tuple) else unwrap(item) for item in args)
        return func(*args, **{name: unwrap(value) for name, value in kwargs.items()})

    # Methods that read or write without a ufunc or a NumPy function.
    def __repr__(self) -> str:
        self._seen("load")
        return repr(self.view(np.ndarray))

    def __str__(self) -> str:
        self._seen("load")
        return str(self.view(np.ndarray))

    def __format__(self, spec: str) -> str:
        self._seen("load")
        return format(self.view(np.ndarray), spec)

    def __bool__(self) -> bool:
        self._seen("load")
        return bool(self.view(np.ndarray))

    def __int__(self) -> int:
        self._seen("load")
        return int(self.view(np.ndarray))

    def __float__(self) -> float:
        self._seen("load")
        return float(self.view(np.ndarray))

    def __index__(self) -> int:
        self._seen("load")
        return self.view(np.ndarray).__index__()

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

    def dot(self, *args: Any, **kwargs: Any) -> Any:
        self._seen("load")
        return self.view(np.ndarray).dot(*(plain(item) for item in args), **kwargs)

    def fill(self, value: Any) -> None:
        self._seen("store")
        self.view(np.ndarray).fill(value)

    def __iter__(self) -> Any:
        self._seen("load")
        return iter(self.view(np.ndarray))

    def __reduce__(self) -> Any:
        self._seen("load")
        return self.view(np.ndarray).__reduce__()


_SEEN: tuple[type, ...] = (SeenArray,)


def _is_fancy(key: Any) -> bool:
    keys = key if isinstance(key, tuple) else (key,)
    return any(isinstance(k, (list, np.ndarray)) for k in keys)


def _element_view(base: np.ndarray, key: Any) -> np.ndarray:
    """The bytes one element (or a fancy selection) reads: a view where NumPy gives one."""
    if _is_fancy(key):
        return base
    keys = key if isinstance(key, tuple) else (key,)
    try:
        # An integer index of each dimension: the element as a 0-d view (its address).
        return base[tuple(k if isinstance(k, slice) else slice(k, None if k == -1 else k + 1) for k in keys)]
    except (TypeError, IndexError):
        return base
