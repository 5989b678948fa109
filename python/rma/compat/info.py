"""MPI.Info of the mpi4py facade: string hints, kept as a dict."""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from .errors import ERR_ARG, ERR_INFO, ERR_INFO_NOKEY
from .errors import Exception as MPIException
from .not_covered import refuse

__all__ = ["Info", "INFO_NULL", "INFO_ENV"]


class Info:
    """Key-value hints (MPI_Info); keys and values are strings. It is also a mapping, as
    mpi4py's Info is: info[key], `in`, len, iteration, keys/values/items (lists, in the order
    the keys were set), get, pop, popitem, update, copy, clear."""

    __slots__ = ("_items", "_null", "_predefined")

    def __init__(self, info: Info | None = None) -> None:
        if info is not None and not isinstance(info, Info):
            raise TypeError(f"rma.compat: MPI.Info: expected an Info, not {type(info).__name__}")
        # (Another handle of the same Info: it shares the items, and compares equal.)
        self._items: dict[str, str] = info._items if info is not None else {}
        self._null = info is None or info._null
        self._predefined = False

    @classmethod
    def Create(cls, items: Mapping[str, Any] | Iterable[tuple[str, Any]] | None = None) -> Info:  # noqa: N802 - mpi4py's names
        """A new Info holding `items`: a mapping or (key, value) pairs."""
        info = cls.__new__(cls)
        info._items, info._null, info._predefined = {}, False, False
        if items is not None:
            info.update(items)
        return info

    @classmethod
    def Create_env(cls, args: Any = None) -> Info:  # noqa: N802
        """A new Info with the keys of MPI.INFO_ENV (`args`, the command and its arguments, as
        MPI_Info_create_env takes them, changes nothing: the ranks are started already)."""
        return INFO_ENV.Dup()

    def Set(self, key: str, value: Any) -> None:  # noqa: N802
        self._check("Set")
        self._items[str(key)] = (
            value if isinstance(value, str) else str(value).lower() if isinstance(value, bool) else str(value)
        )

    def Get(self, key: str) -> str | None:  # noqa: N802
        self._check("Get")
        return self._items.get(key)

    def Delete(self, key: str) -> None:  # noqa: N802
        self._check("Delete")
        if key not in self._items:
            raise MPIException(ERR_INFO_NOKEY, f"rma.compat: Info.Delete: no key {key!r}")
        del self._items[key]

    def Get_nkeys(self) -> int:  # noqa: N802
        self._check("Get_nkeys")
        return len(self._items)

    def Get_nthkey(self, n: int) -> str:  # noqa: N802
        self._check("Get_nthkey")
        keys = list(self._items)
        if not 0 <= n < len(keys):
            raise MPIException(ERR_ARG, f"rma.compat: Info.Get_nthkey: no key number {n} among {len(keys)}")
        return keys[n]

    def Dup(self) -> Info:  # noqa: N802
        self._check("Dup")
        return Info.Create(self._items)

    def Free(self) -> None:  # noqa: N802
        self._check("Free")
        if self._predefined:
            raise MPIException(ERR_INFO, "rma.compat: Info.Free: a predefined info cannot be freed")
        self._null, self._items = True, {}

    # Python's mapping protocol, as mpi4py's Info has it (INFO_NULL: empty, and refusing writes
    # with KeyError).
    def __len__(self) -> int:
        return len(self._items) if not self._null else 0

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys())

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def __getitem__(self, key: str) -> str:
        return self._items[key]

    def __setitem__(self, key: str, value: Any) -> None:
        if self._null:
            raise KeyError(key)
        self.Set(key, value)

    def __delitem__(self, key: str) -> None:
        if self._null or key not in self._items:
            raise KeyError(key)
        self.Delete(key)

    def keys(self) -> list[str]:
        return list(self._items)

    def values(self) -> list[str]:
        return list(self._items.values())

    def items(self) -> list[tuple[str, str]]:
        return list(self._items.items())

    def get(self, key: str, default: Any = None) -> Any:
        return self._items.get(key, default)

    def update(self, items: Any = (), **kwds: Any) -> None:
        """Set each (key, value) of `items` (a mapping or pairs), then of `kwds`."""
        if self._null:
            raise KeyError("rma.compat: Info.update: the info is MPI.INFO_NULL")
        if hasattr(items, "keys"):
            pairs = [(key, items[key]) for key in items.keys()]  # noqa: SIM118 - a mapping-like object may have keys() only
        else:
            try:
                pairs = [(key, value) for key, value in items]
            except TypeError:
                raise TypeError(
                    f"rma.compat: MPI.Info: expected a mapping or (key, value) pairs, not {type(items).__name__}"
                ) from None
        for key, value in [*pairs, *kwds.items()]:
            self.Set(key, value)

    def pop(self, key: str, *default: Any) -> Any:
        if key in self._items:
            return self._items.pop(key)
        if default:
            return default[0]
        raise KeyError(key)

    def popitem(self) -> tuple[str, str]:
        if not self._items:
            raise KeyError("rma.compat: Info.popitem: the info is empty")
        return self._items.popitem()

    def copy(self) -> Info:
        return Info() if self._null else self.Dup()

    def clear(self) -> None:
        self._items.clear()

    def _check(self, call: str) -> None:
        if self._null:
            raise MPIException(ERR_INFO, f"rma.compat: Info.{call}: the info is MPI.INFO_NULL")

    def _hints(self) -> dict[str, bool]:
        """The hints rma's windows take (no_locks), as rma's Window calls want them."""
        value = self._items.get("no_locks")
        return {} if value is None else {"no_locks": value.strip().lower() == "true"}

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Info):
            return NotImplemented
        if self._null or other._null:
            return self._null and other._null
        return self._items is other._items

    def __hash__(self) -> int:
        return id(self)

    def __bool__(self) -> bool:
        return not self._null

    def __reduce__(self) -> str | tuple[Any, ...]:
        # As mpi4py's: INFO_NULL and INFO_ENV pickle by name, a copy of them as a copy; another
        # Info as a new one with its items.
        if self is INFO_NULL or self is INFO_ENV:
            return "INFO_NULL" if self is INFO_NULL else "INFO_ENV"
        if self._null:
            return (type(self), ())
        if self == INFO_ENV:
            return (type(self), (INFO_ENV,))
        return (type(self).Create, (self.items(),))


INFO_NULL = Info()
INFO_NULL._predefined = True
INFO_ENV = Info.Create(
    {
        "command": sys.executable,
        "argv": " ".join(sys.argv[1:]),
        "maxprocs": os.environ.get("RMA_SIZE", "1"),
        "host": socket.gethostname(),
        "wdir": os.getcwd(),
        "thread_level": "MPI_THREAD_MULTIPLE",
    }
)
INFO_ENV._predefined = True


def hints_of(info: Info | Mapping[str, Any] | None) -> dict[str, bool] | None:
    """The rma window hints of an MPI.Info (or a dict of them; None or INFO_NULL: none)."""
    if info is None or (isinstance(info, Info) and info._null):
        return None
    if isinstance(info, Info):
        return info._hints() or None
    return Info.Create(info)._hints() or None


# mpi4py's handle calls (an Info is a Python object here, not an MPI handle).
refuse(Info, "f2py py2f fromhandle fromint toint handle free")
