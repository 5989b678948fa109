"""MPI.Info of the mpi4py facade: string hints, kept as a dict."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from .errors import ERR_INFO, ERR_INFO_NOKEY
from .errors import Exception as MPIException

__all__ = ["Info", "INFO_NULL", "INFO_ENV"]


class Info:
    """Key-value hints (MPI_Info); keys and values are strings."""

    __slots__ = ("_items", "_null", "_predefined")

    def __init__(self, info: Info | None = None) -> None:
        self._items: dict[str, str] = dict(info._items) if info is not None else {}
        self._null = info is None or info._null
        self._predefined = False

    @classmethod
    def Create(cls, items: Mapping[str, Any] | None = None) -> Info:  # noqa: N802 - mpi4py's names
        info = cls.__new__(cls)
        info._items, info._null, info._predefined = {}, False, False
        for key, value in (items or {}).items():
            info.Set(key, value)
        return info

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
        return list(self._items)[n]

    def Dup(self) -> Info:  # noqa: N802
        self._check("Dup")
        return Info.Create(self._items)

    def Free(self) -> None:  # noqa: N802
        if self._predefined:
            raise MPIException(ERR_INFO, "rma.compat: Info.Free: a predefined info cannot be freed")
        self._null, self._items = True, {}

    # Python's mapping protocol, as mpi4py's Info has.
    def __len__(self) -> int:
        return len(self._items) if not self._null else 0

    def __iter__(self) -> Iterator[str]:
        return iter(dict(self._items))

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def __getitem__(self, key: str) -> str:
        return self._items[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.Set(key, value)

    def __delitem__(self, key: str) -> None:
        self.Delete(key)

    def keys(self):
        return self._items.keys()

    def values(self):
        return self._items.values()

    def items(self):
        return self._items.items()

    def get(self, key: str, default: Any = None) -> Any:
        return self._items.get(key, default)

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
        return self is other or (self._null and other._null)

    def __hash__(self) -> int:
        return id(self)

    def __bool__(self) -> bool:
        return not self._null


INFO_NULL = Info()
INFO_NULL._predefined = True
INFO_ENV = Info.Create()
INFO_ENV._predefined = True


def hints_of(info: Info | Mapping[str, Any] | None) -> dict[str, bool] | None:
    """The rma window hints of an MPI.Info (or a dict of them; None or INFO_NULL: none)."""
    if info is None or (isinstance(info, Info) and info._null):
        return None
    if isinstance(info, Info):
        return info._hints() or None
    return Info.Create(info)._hints() or None
