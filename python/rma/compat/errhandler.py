"""MPI.Errhandler of the mpi4py facade. rma always raises (as mpi4py's default
ERRORS_RETURN does in Python); the handler set on a window or communicator is remembered so
that Get_errhandler gives it back, and ERRORS_ARE_FATAL is honoured as "raise" too, since an
uncaught exception ends the rank and rmarun then stops the job."""

from __future__ import annotations

from .errors import ERR_ARG, ERR_ERRHANDLER
from .errors import Exception as MPIException
from .not_covered import refuse

__all__ = ["Errhandler", "ERRHANDLER_NULL", "ERRORS_RETURN", "ERRORS_ARE_FATAL", "ERRORS_ABORT"]


class Errhandler:
    """An error handler (MPI_Errhandler)."""

    __slots__ = ("_name",)

    def __init__(self, errhandler: Errhandler | None = None) -> None:
        self._name = errhandler._name if errhandler is not None else "MPI_ERRHANDLER_NULL"

    @classmethod
    def _named(cls, name: str) -> Errhandler:
        handler = cls.__new__(cls)
        handler._name = name
        return handler

    def Free(self) -> None:  # noqa: N802 - mpi4py's name
        """Free this handle (a copy Get_errhandler gave); MPI.ERRHANDLER_NULL cannot be freed."""
        # (The predefined handlers themselves, not the copies Get_errhandler gives.)
        if not self:
            raise MPIException(ERR_ERRHANDLER, "rma.compat: Errhandler.Free: the handler is MPI.ERRHANDLER_NULL")
        if any(self is handler for handler in (ERRORS_RETURN, ERRORS_ARE_FATAL, ERRORS_ABORT)):
            raise MPIException(ERR_ERRHANDLER, f"rma.compat: Errhandler.Free: {self._name} is predefined")
        self._name = "MPI_ERRHANDLER_NULL"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Errhandler):
            return NotImplemented
        return self._name == other._name

    def __hash__(self) -> int:
        return hash(self._name)

    def __bool__(self) -> bool:
        return self._name != "MPI_ERRHANDLER_NULL"

    def __repr__(self) -> str:
        return f"<MPI.Errhandler {self._name}>"


ERRHANDLER_NULL = Errhandler()
ERRORS_RETURN = Errhandler._named("MPI_ERRORS_RETURN")
ERRORS_ARE_FATAL = Errhandler._named("MPI_ERRORS_ARE_FATAL")
ERRORS_ABORT = Errhandler._named("MPI_ERRORS_ABORT")


def checked(handler: object, call: str) -> Errhandler:
    """A handler a program sets, as a fresh object (Free on it must not free the predefined one)."""
    if not isinstance(handler, Errhandler) or not handler:
        raise MPIException(ERR_ARG, f"rma.compat: {call}: expected an MPI.Errhandler, not {handler!r}")
    return Errhandler(handler)


# mpi4py's handle calls (an Errhandler is a Python object here, not an MPI handle).
refuse(Errhandler, "f2py py2f fromhandle fromint toint handle free")
