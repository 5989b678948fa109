"""What the mpi4py facade answers for a call of mpi4py it does not cover: NotImplementedError
naming the call (also an AttributeError, so that hasattr() and getattr(obj, name, default)
behave). The names are listed per class and installed as attributes that raise when read: a
class-level __getattr__ would do the same, but it slows every attribute access of the class."""

from __future__ import annotations

from typing import Any

__all__ = ["NotCoveredError", "refuse", "refused_names"]


class NotCoveredError(NotImplementedError, AttributeError):
    """An mpi4py call that rma.compat does not provide."""


class _Refused:
    """An attribute that raises NotCoveredError when read, naming the class and the call."""

    def __init__(self, owner: str, name: str) -> None:
        self._what = f"{owner}.{name}"

    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        raise NotCoveredError(
            f"rma.compat: {self._what} is not covered by rma's mpi4py facade (the porting guide lists what is)"
        )


def refuse(cls: type, names: str, owner: str | None = None) -> None:
    """Make each of the whitespace-separated mpi4py `names` of `cls` raise NotCoveredError, naming
    them `owner`.name (the class the user sees: "Comm" for the mixins MPI.Comm inherits)."""
    for name in names.split():
        # (A name a base class covers too: refusing it here would hide that class's call.)
        covering = [k for k in cls.__mro__ if name in vars(k) and not isinstance(vars(k)[name], _Refused)]
        if covering:
            raise AssertionError(f"{covering[0].__name__}.{name} is covered: it must not be listed as refused")
        setattr(cls, name, _Refused(owner or cls.__name__, name))


def refused_names(cls: type) -> set[str]:
    """The names `refuse` made raise on `cls` or a class it inherits from."""
    return {name for klass in cls.__mro__ for name, value in vars(klass).items() if isinstance(value, _Refused)}
