"""Type checkers see rma's public names with their real types, although `import rma` loads them
lazily (rma.__getattr__, so that rmarun and the pytest plugin's controller start without the
compiled core): python/rma/__init__.py imports them again under `if TYPE_CHECKING:`."""

from __future__ import annotations

import ast
import re
import textwrap
from pathlib import Path

import pytest

import rma
import typecheck

SNIPPET = """
import numpy as np
import rma

comm = rma.init()
win = rma.Window.allocate(comm, 4, np.float64)
reveal_type(rma.Window.allocate(rma.init(), 4))
reveal_type(rma.init())
reveal_type(win.fence())
reveal_type(win.rget(np.empty(2), 1))
reveal_type(rma.MAX(np.ones(2), np.zeros(2)))
reveal_type(rma.sync.Counter(comm).next())
reveal_type(comm.split(0))
win.put(np.arange(4.0), 1, target=np.s_[1:3])
win.accumulate([1.0, 2.0], 0, op=rma.MAX)
with win.lock(1, rma.LOCK_SHARED, rma.Mode.NOCHECK):
    pass
win.put(np.arange(4.0), "one")  # the one error: proves that the names are not Any
"""


def test_mypy_sees_the_public_types(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    (tmp_path / "snippet.py").write_text(SNIPPET)
    done = typecheck.run(
        [
            "-m", "mypy", "snippet.py",
            "--cache-dir", str(typecheck.cache_dir(request, tmp_path)),
            # Type errors inside rma's own modules are not this test's business.
            "--follow-imports=silent",
            "--no-error-summary", "--hide-error-context", "--no-color-output", "--show-error-codes",
        ],
        cwd=tmp_path,
    )  # fmt: skip
    # Without line numbers, builtins' module (older mypy versions) and NumPy's shape type.
    lines = [
        re.sub(r"numpy\.ndarray\[.*, numpy\.dtype", "numpy.ndarray[..., numpy.dtype", line.split(": ", 1)[1]).replace(
            "builtins.", ""
        )
        for line in done.stdout.splitlines()
    ]
    expected = [
        'note: Revealed type is "rma.window.Window"',
        'note: Revealed type is "rma.comm.Comm"',
        'note: Revealed type is "rma._core.Epoch"',
        'note: Revealed type is "rma._core.Request"',
        'note: Revealed type is "numpy.ndarray[..., numpy.dtype[Any]]"',
        'note: Revealed type is "int"',
        'note: Revealed type is "rma.comm.Comm | None"',
        'error: Argument 2 to "put" of "Window" has incompatible type "str"; expected "int"  [arg-type]',
    ]
    assert lines == expected, done.stdout + done.stderr


def _type_checking_names(source: str) -> set[str]:
    """Return the names imported under `if TYPE_CHECKING:` at the top level of `source`."""
    names: set[str] = set()
    for node in ast.parse(source).body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for statement in node.body:
                assert isinstance(statement, ast.ImportFrom), ast.unparse(statement)
                names.update(alias.asname or alias.name for alias in statement.names)
    return names


def test_every_lazy_name_is_visible_statically() -> None:
    source = Path(rma.__file__).read_text()
    assert _type_checking_names(source) == set(rma._LAZY), textwrap.dedent("""
        python/rma/__init__.py: the names under `if TYPE_CHECKING:` must be those of _LAZY""")
    missing = [name for name in rma.__all__ if name not in rma._LAZY and name not in vars(rma)]
    assert not missing, f"rma.__all__ names neither defined nor lazy: {missing}"
