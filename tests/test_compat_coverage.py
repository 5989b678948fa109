"""Issue 40, item 6: the porting guide's table of mpi4py's names (rma.compat.coverage) is
complete and true.

mpi4py's own stub (src/mpi4py/MPI.pyi of the 4.1.2 sdist, fetched at test time) names every
class, method, attribute, function and constant of mpi4py's MPI module. Each must be on one side
of the table: covered (the facade has it, and reading it raises nothing) or not covered (listed
in a refuse() call, MPI.NOT_COVERED or MPI.NOT_COVERED_CLASSES, and reading it raises
NotCoveredError naming it).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from mpi4py_sdist import unpack
from rma.compat import MPI, coverage
from rma.compat.not_covered import NotCoveredError


@pytest.fixture(scope="module")
def stub(tmp_path_factory) -> dict[str, list[str] | None]:
    """mpi4py's MPI names: each class with its members' names, the other names with None."""
    folder = unpack(tmp_path_factory.mktemp("mpi4py"), "src/mpi4py/")
    tree = ast.parse((Path(folder) / "MPI.pyi").read_text())
    names: dict[str, list[str] | None] = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            names[node.name] = sorted({_name(member) for member in node.body} - {None})
        elif isinstance(node, (ast.FunctionDef, ast.AnnAssign, ast.Assign)):
            name = _name(node)
            if name:
                names[name] = None
    return {name: members for name, members in names.items() if not name.startswith("_")}


def _name(node: ast.AST):
    if isinstance(node, ast.FunctionDef):
        return node.name
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return node.target.id
    if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
        return node.targets[0].id
    return None


def _public(names: list[str]) -> list[str]:
    return [n for n in names if not n.startswith("_")]


def test_every_module_name_of_mpi4py_is_covered_or_listed(stub):
    covered, refused = coverage.module_names()
    not_classes = [n for n, members in stub.items() if members is None]
    unplaced = [n for n in not_classes if n not in covered and n not in refused]
    assert unplaced == [], f"mpi4py names the porting table does not place: {' '.join(unplaced)}"
    for name in refused:
        with pytest.raises(NotCoveredError, match=f"MPI.{name} is not covered"):
            getattr(MPI, name)


def test_the_table_names_only_mpi4py_names(stub):
    # (A helper that leaks into MPI through a star import would show as a covered mpi4py name.)
    covered, _ = coverage.module_names()
    assert [n for n in covered if n not in stub] == []
    assert [n for n in coverage.classes() if n not in stub] == []


def test_every_class_of_mpi4py_is_the_facades_or_listed_whole(stub):
    have = coverage.classes()
    whole = MPI.NOT_COVERED_CLASSES.split()
    unplaced = [n for n, members in stub.items() if members is not None and n not in have and n not in whole]
    assert unplaced == []
    for name in whole:
        with pytest.raises(NotCoveredError, match=f"MPI.{name} is not covered"):
            getattr(MPI, name)


def test_every_member_of_the_facades_classes_is_covered_or_refused(stub):
    unplaced = []
    for name, cls in coverage.classes().items():
        covered, refused = coverage.class_names(cls)
        for member in _public(stub.get(name) or []):
            if member not in covered and member not in refused:
                unplaced.append(f"{name}.{member}")
        for member in refused:
            with pytest.raises(NotCoveredError, match=rf"\.{member} is not covered"):
                getattr(cls, member)
    assert unplaced == [], f"mpi4py names the porting table does not place: {' '.join(unplaced)}"


def test_the_porting_guide_shows_the_table_made_from_the_code():
    # docs/conf.py writes the table at each build; the page includes that file.
    page = (Path(__file__).parent.parent / "docs" / "porting.md").read_text()
    assert "_generated/mpi4py_coverage.md" in page
    rows = {row.split(" | ")[0]: row.split(" | ")[1:] for row in coverage.table().splitlines()}
    covered, refused = rows["| `MPI.Win`"]
    assert "`Put`" in covered and "`Put`" not in refused and "`Create_errhandler`" in refused
    assert rows["| `MPI.File`"] == ["—", "the whole class |"]
