"""Issue 38, item 2: no import circle in python/rma.

The graph is read from the source with `ast`, so that an import inside a function (which runs
only when the function does) counts as much as one at the top of a module: a circle through a
function-level import is still a circle, only one that a test run may not reach. What runs
only for type checkers (`if TYPE_CHECKING:`) does not count; the names `rma/__init__.py` loads
on first use (its `_LAZY` table) do. A circle fails the test, named module by module.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "python" / "rma"


def modules_of(root: Path) -> dict[str, tuple[Path | None, bool]]:
    """{dotted name: (source file, is a package)} of the package at `root`; a compiled module
    described by a stub (rma._core) is a module without a source."""
    found: dict[str, tuple[Path | None, bool]] = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        package = parts[-1] == "__init__"
        found[".".join(parts[:-1] if package else parts)] = (path, package)
    for stub in sorted(root.rglob("*.pyi")):
        name = ".".join(stub.relative_to(root.parent).with_suffix("").parts)
        found.setdefault(name, (None, False))
    return found


def _type_checking_only(tree: ast.AST) -> set[int]:
    """The nodes under `if TYPE_CHECKING:` (never run)."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
            for statement in node.body:
                skipped.update(id(inner) for inner in ast.walk(statement))
    return skipped


def _absolute(name: str, package: bool, level: int, module: str | None) -> str:
    """The module `from <level dots><module> import ...` in module `name` names."""
    if level == 0:
        return module or ""
    base = name.split(".") if package else name.split(".")[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join(base + ([module] if module else []))


def _lazy_table(tree: ast.AST, name: str) -> set[str]:
    """The modules of a package's `_LAZY = {"attribute": ".module", ...}` table."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "_LAZY" for t in node.targets):
            for value in ast.walk(node.value):
                if isinstance(value, ast.Constant) and isinstance(value.value, str) and value.value.startswith("."):
                    found.add(_absolute(name, True, 1, value.value[1:]))
    return found


def import_graph(root: Path) -> dict[str, set[str]]:
    """{module: the modules of the package it imports}, at module level and inside functions."""
    modules = modules_of(root)
    top = root.name
    graph: dict[str, set[str]] = {}
    for name, (path, package) in modules.items():
        imported: set[str] = set()
        if path is not None:
            tree = ast.parse(path.read_text(), str(path))
            skipped = _type_checking_only(tree)
            for node in ast.walk(tree):
                if id(node) in skipped:
                    continue
                if isinstance(node, ast.Import):
                    imported.update(alias.name for alias in node.names)
                elif isinstance(node, ast.ImportFrom):
                    source = _absolute(name, package, node.level, node.module)
                    for alias in node.names:  # `from . import x`: the module x, when there is one
                        submodule = f"{source}.{alias.name}"
                        imported.add(submodule if submodule in modules else source)
            if package:
                imported |= _lazy_table(tree, name)
        graph[name] = {m for m in imported if m in modules and m != name and m.split(".")[0] == top}
    return graph


def find_circle(graph: dict[str, set[str]]) -> list[str] | None:
    """A circle of the graph as [a, b, ..., a], or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for successor in sorted(graph[node]):
            if state.get(successor) == 1:
                return path[path.index(successor) :] + [successor]
            if successor not in state:
                circle = visit(successor)
                if circle:
                    return circle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            circle = visit(node)
            if circle:
                return circle
    return None


def test_python_rma_has_no_import_circle():
    graph = import_graph(PACKAGE)
    # The reader sees what it must: imports inside functions, the package's lazy names, and
    # the compiled module (so that the test cannot pass by seeing nothing).
    assert "rma._window_kinds" in graph["rma.window"]  # module level
    assert {"rma.separate", "rma.check.window"} <= graph["rma._window_kinds"]  # inside a function
    assert "rma.window" in graph["rma"]  # rma.Window, loaded on first use
    assert "rma._core" in graph["rma._native"]
    circle = find_circle(graph)
    assert circle is None, "import circle in python/rma: " + " -> ".join(circle or [])


def test_a_circle_through_a_function_level_import_is_found(tmp_path):
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("")
    (package / "base.py").write_text("from .sub import kinds\n")
    (package / "sub" / "kinds.py").write_text("def kind():\n    from ..base import x\n    return x\n")
    (package / "other.py").write_text("if TYPE_CHECKING:\n    from . import base\n")
    graph = import_graph(package)
    assert graph["pkg.other"] == set()  # (for type checkers only)
    assert find_circle(graph) == ["pkg.base", "pkg.sub.kinds", "pkg.base"]
    (package / "sub" / "kinds.py").write_text("def kind():\n    return 1\n")
    assert find_circle(import_graph(package)) is None


def test_every_bench_script_imports():
    # bench/'s scripts import one another by name (run.py's helpers, table_cells, mpi_envs); a
    # name moved or renamed shows here, not at the end of ./dev.sh test or in a user's bench.
    import subprocess
    import sys

    bench = PACKAGE.parent.parent / "bench"
    names = sorted(path.stem for path in bench.glob("*.py"))
    assert "run" in names and "setting_cost" in names, names
    code = "import importlib\nfor name in " + repr(names) + ":\n    importlib.import_module(name)\n"
    done = subprocess.run([sys.executable, "-c", code], cwd=bench, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
