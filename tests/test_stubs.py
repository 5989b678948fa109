"""python/rma/_core.pyi says what the compiled extension rma._core is: mypy's stubtest compares
the two (classes, methods and their parameters, functions, constants), so that a change in
src/bindings/ that the stub does not follow fails the suite. Entries of
tests/stubtest_allowlist.txt are what a stub cannot express, each with its reason."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import rma
import typecheck

HERE = Path(__file__).resolve().parent
STUB = Path(rma.__file__).resolve().parent / "_core.pyi"

# rma._core as the package uses it: rma.Op is only reachable through rma.ops, which gives it
# __call__ (the NumPy oracle) when it loads, so stubtest runs after importing rma.ops.
RUN_STUBTEST = "import sys, rma.ops; from mypy.stubtest import main; sys.exit(main())"


def test_stub_matches_the_extension(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    config = tmp_path / "mypy.ini"
    config.write_text(f"[mypy]\ncache_dir = {typecheck.cache_dir(request, tmp_path)}\n")
    done = typecheck.run(
        ["-c", RUN_STUBTEST, "rma._core", "--mypy-config-file", str(config),
         "--allowlist", str(HERE / "stubtest_allowlist.txt")],
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, f"python/rma/_core.pyi differs from rma._core:\n{done.stdout}{done.stderr}"


def _stub_enums() -> dict[str, list[tuple[str, int]]]:
    """Return the members (name, value) of each enum class of the stub, in order."""
    enums = {}
    for node in ast.parse(STUB.read_text()).body:
        if isinstance(node, ast.ClassDef) and any(ast.unparse(base).startswith("enum.") for base in node.bases):
            enums[node.name] = [
                (item.targets[0].id, ast.literal_eval(item.value))
                for item in node.body
                if isinstance(item, ast.Assign) and isinstance(item.targets[0], ast.Name)
            ]
    return enums


def test_stub_enums_have_the_core_values() -> None:
    # stubtest does not compare enum members' values.
    from rma._native import _core

    enums = _stub_enums()
    assert sorted(enums) == ["LockType", "Mode", "Op", "TransportSetting"]
    for name, members in enums.items():
        assert members == [(member.name, member.value) for member in getattr(_core, name)], name
