"""Which of mpi4py's names the facade covers, read from the facade itself: the porting guide's
table (docs/porting.md includes what `python -m rma.compat.coverage` prints, made at each docs
build) so that it cannot drift from the code.

A class's name is covered when the class has it and reading it does not raise NotCoveredError;
it is listed as not covered when a `refuse(...)` call names it (not_covered.py). A module-level
name is covered when MPI has it; MPI.NOT_COVERED lists the others, and MPI.NOT_COVERED_CLASSES
the classes of which nothing is covered. tests/test_compat_coverage.py checks these lists against
mpi4py's own stub (MPI.pyi of the mpi4py 4.1.2 sdist, fetched at test time): every name of
mpi4py is on one side or the other.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator

from . import MPI
from .not_covered import refused_names

__all__ = ["classes", "class_names", "module_names", "table"]


def classes() -> dict[str, type]:
    """mpi4py's classes that the facade has (some of their names covered), by mpi4py's name."""
    found = {}
    for name in dir(MPI):
        if name.startswith("_") or name in MPI.NOT_COVERED_CLASSES.split() or name in MPI.FACADE_ONLY.split():
            continue
        value = getattr(MPI, name)
        if inspect.isclass(value) and value.__module__.startswith("rma.compat") and name == value.__name__:
            found[name] = value
    return dict(sorted(found.items()))


def class_names(cls: type) -> tuple[list[str], list[str]]:
    """(covered, not covered) public names of a facade class, sorted."""
    refused = refused_names(cls)
    declared = {n for klass in cls.__mro__ for n in vars(klass).get("__annotations__", {})}  # (instance attributes)
    covered = [n for n in set(dir(cls)) | declared if not n.startswith("_") and n not in refused]
    return sorted(covered), sorted(refused)


def module_names() -> tuple[list[str], list[str]]:
    """(covered, not covered) module-level names of MPI other than its classes (functions,
    constants, other names of a class such as `memory`), sorted."""
    facade_only, own_classes = MPI.FACADE_ONLY.split(), classes()
    # (isidentifier: pytest's assertion rewriting, which rewrites every module of a plugin's
    # installed distribution, rma's among them, adds names such as "@py_builtins".)
    covered = [
        n
        for n in dir(MPI)
        if n.isidentifier() and not n.startswith("_") and n not in own_classes and n not in facade_only
    ]
    return sorted(covered), sorted(MPI.NOT_COVERED.split())


def _rows() -> Iterator[str]:
    yield "| mpi4py name | covered | not covered |"
    yield "| --- | --- | --- |"
    covered, refused = module_names()
    yield f"| `MPI` (functions and constants) | {_names(covered)} | {_names(refused)} |"
    for name, cls in classes().items():
        covered, refused = class_names(cls)
        yield f"| `MPI.{name}` | {_names(covered)} | {_names(refused)} |"
    for name in sorted(MPI.NOT_COVERED_CLASSES.split()):
        yield f"| `MPI.{name}` | — | the whole class |"


def _names(names: list[str]) -> str:
    return ", ".join(f"`{n}`" for n in names) if names else "—"


def table() -> str:
    """The porting guide's coverage table, in Markdown."""
    return "\n".join(_rows()) + "\n"


if __name__ == "__main__":
    print(table(), end="")
