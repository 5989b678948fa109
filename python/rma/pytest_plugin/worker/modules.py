"""Import test modules on a rank as pytest imported them in its process."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import os
import sys

__all__ = ["Modules"]


def _compile_module(path: str):
    """Compile a test module, with pytest's assertion rewriting when it is available.

    Rewritten asserts explain a failure ("assert 1 == 0 + where 1 = comm.rank")
    as they do under pytest; should pytest's (internal) rewriter be missing or
    change, the module is compiled plainly and asserts still work.
    """
    with open(path, "rb") as f:
        source = f.read()
    try:
        from _pytest.assertion.rewrite import rewrite_asserts

        tree = ast.parse(source, filename=path)
        rewrite_asserts(tree, source, path, None)
        return compile(tree, path, "exec", dont_inherit=True)
    except SyntaxError:
        raise
    except Exception:  # noqa: BLE001 - any trouble with the rewriter: fall back
        return compile(source, path, "exec", dont_inherit=True)


class Modules:
    """Import test modules by path under the names pytest gave them, once each."""

    def __init__(self) -> None:
        self._by_path: dict[str, object] = {}

    def get(self, path: str, name: str):
        module = self._by_path.get(path)
        if module is not None:
            return module
        # Under pytest's default "prepend" import mode the directory that holds the
        # module (or its top package) is on sys.path; the plugin mirrors pytest's
        # sys.path, and this covers a module pytest imported some other way.
        base = os.path.dirname(path)
        for _ in range(name.count(".")):
            base = os.path.dirname(base)
        if base not in sys.path:
            sys.path.insert(0, base)
        parent = None
        if "." in name:
            parent = importlib.import_module(name.rpartition(".")[0])
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None:
            raise ImportError(f"cannot import the test module {path}")
        module = importlib.util.module_from_spec(spec)
        code = _compile_module(path)
        sys.modules[name] = module
        try:
            exec(code, module.__dict__)
        except BaseException:
            sys.modules.pop(name, None)
            raise
        if parent is not None:
            setattr(parent, name.rpartition(".")[2], module)
        self._by_path[path] = module
        return module
