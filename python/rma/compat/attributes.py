"""Attributes of communicators (and windows) as mpi4py has them: the predefined keyvals MPI sets on
COMM_WORLD (TAG_UB, HOST, IO, WTIME_IS_GLOBAL, UNIVERSE_SIZE, APPNUM, LASTUSEDCODE) and the
user's keyvals (Comm.Create_keyval), with their copy callback run by Dup and their delete
callback run by Delete_attr, by Set_attr over a value and by Free.

Attributes are local to a process (MPI's are too): nothing here communicates."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .constants import APPNUM, HOST, IO, LASTUSEDCODE, TAG_UB, UNIVERSE_SIZE, WTIME_IS_GLOBAL
from .errors import ERR_KEYVAL, run_callback
from .errors import Exception as MPIException

PREDEFINED = frozenset((TAG_UB, HOST, IO, WTIME_IS_GLOBAL, UNIVERSE_SIZE, APPNUM, LASTUSEDCODE))


@dataclass(frozen=True)
class Keyval:
    """A user's keyval: what Dup does with its value (copy_fn: None drops it, True keeps it,
    a function returns the new value or NotImplemented to drop it) and what runs when the
    value goes (delete_fn)."""

    copy_fn: Callable[[Any, int, Any], Any] | bool | None
    delete_fn: Callable[[Any, int, Any], Any] | None


_keyvals: dict[int, Keyval] = {}
_numbers = itertools.count(1000)


def create(copy_fn: Any, delete_fn: Any) -> int:
    """Register a user's keyval and return its number (mpi4py's rules: False means None, and a
    delete_fn of True means none)."""
    copy_fn = None if copy_fn is False else copy_fn
    delete_fn = None if delete_fn in (False, True) else delete_fn
    number = next(_numbers)
    _keyvals[number] = Keyval(copy_fn, delete_fn)
    return number


def free(keyval: int, call: str) -> None:
    """Forget a user's keyval (values already set keep their callbacks, as MPI says)."""
    if keyval not in _keyvals:
        raise MPIException(ERR_KEYVAL, f"rma.compat: {call}: {keyval} is not a keyval of the user's")
    del _keyvals[keyval]


def keyval(number: int, call: str) -> Keyval:
    """The user's keyval `number`, or MPI.ERR_KEYVAL naming the call."""
    found = _keyvals.get(number)
    if found is None:
        raise MPIException(ERR_KEYVAL, f"rma.compat: {call}: {number} is not a valid keyval")
    return found


def _run(callback: Callable[[Any, int, Any], Any], owner: Any, number: int, value: Any, call: str) -> Any:
    """Run a copy or delete callback, mpi4py's way (errors.run_callback)."""
    return run_callback(callback, (owner, number, value), f"{call} (keyval {number})")


class Attributes:
    """The attributes one communicator or window holds: keyval -> (its Keyval, value)."""

    __slots__ = ("_values",)

    def __init__(self) -> None:
        self._values: dict[int, tuple[Keyval, Any]] = {}

    def get(self, number: int, call: str) -> tuple[bool, Any]:
        """(found, value) of keyval `number`; an unknown keyval is MPI.ERR_KEYVAL."""
        if number in self._values:
            return True, self._values[number][1]
        keyval(number, call)
        return False, None

    def set(self, owner: Any, number: int, value: Any, call: str) -> None:
        """Set a value; the one it replaces goes through its delete callback first."""
        kind = keyval(number, call) if number not in self._values else self._values[number][0]
        self.delete(owner, number, call, missing_ok=True)
        self._values[number] = (kind, value)

    def delete(self, owner: Any, number: int, call: str, missing_ok: bool = False) -> None:
        """Remove a value, running its delete callback (MPI's MPI_Comm_delete_attr)."""
        if number not in self._values:
            if not missing_ok:
                keyval(number, call)
                raise MPIException(ERR_KEYVAL, f"rma.compat: {call}: keyval {number} has no value here")
            return
        kind, value = self._values.pop(number)
        if kind.delete_fn is not None:
            _run(kind.delete_fn, owner, number, value, call)

    def copied(self, owner: Any) -> Attributes:
        """The attributes a duplicate of `owner` starts with: each copy callback decides."""
        made = Attributes()
        for number, (kind, value) in self._values.items():
            if kind.copy_fn is None:
                continue
            new = value if kind.copy_fn is True else _run(kind.copy_fn, owner, number, value, "Comm.Dup")
            if new is not NotImplemented:
                made._values[number] = (kind, new)
        return made

    def clear(self, owner: Any, call: str = "Comm.Free") -> None:
        """Delete every value, newest first (as Free does before the communicator or window goes)."""
        for number in reversed(list(self._values)):
            self.delete(owner, number, call)
