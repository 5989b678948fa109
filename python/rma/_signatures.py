"""Signatures of the compiled window's methods, for inspect.signature and IPython's `obj?`.

The methods (src/bindings/method_object.cpp) carry CPython's text signature as the first line
of their docstring; built-in methods cannot express defaults such as `op=rma.Op.SUM` there, so
we build the inspect.Signature here, evaluating each default in the rma package.
"""

from __future__ import annotations

import ast
import inspect

import rma


def from_text(line: str) -> inspect.Signature:
    """Return the Signature of `name($self, /, a, b=0, *, c=None)`, defaults evaluated in rma."""
    arguments = ast.parse(f"def {line.replace('$', '')}: pass").body[0].args  # type: ignore[attr-defined]
    parameters = []

    def add(node: ast.arg, kind: inspect._ParameterKind, default: ast.expr | None) -> None:
        value = inspect.Parameter.empty if default is None else eval(ast.unparse(default), {"rma": rma})  # noqa: S307
        parameters.append(inspect.Parameter(node.arg, kind, default=value))

    positional = arguments.posonlyargs + arguments.args
    defaults = [None] * (len(positional) - len(arguments.defaults)) + list(arguments.defaults)
    for index, (node, default) in enumerate(zip(positional, defaults)):
        kind = (
            inspect.Parameter.POSITIONAL_ONLY
            if index < len(arguments.posonlyargs)
            else inspect.Parameter.POSITIONAL_OR_KEYWORD
        )
        add(node, kind, default)
    for node, default in zip(arguments.kwonlyargs, arguments.kw_defaults):
        add(node, inspect.Parameter.KEYWORD_ONLY, default)
    return inspect.Signature(parameters)
