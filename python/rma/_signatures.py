"""Signatures of the compiled methods, for inspect.signature and IPython's `obj?`.

Each method of rma._core's Window, Comm, MessageRequest and FacadeWindow carries its parameter
table (src/bindings/parameters.hpp), the one source of its signature, as `_parameters`: a
(name, default, keyword_only) per parameter, the default a Python expression such as
`rma.Op.SUM` (None: required). Built-in methods cannot express such defaults, so we build the
inspect.Signature here, evaluating each default in the rma package.
"""

from __future__ import annotations

import inspect

import rma

# One parameter of a compiled method's table: (name, default expression or None, keyword-only).
Described = tuple[str, str | None, bool]


def default_of(expression: str | None) -> object:
    """Return the value of a table's default (inspect.Parameter.empty for a required one)."""
    if expression is None:
        return inspect.Parameter.empty
    return eval(expression, {"rma": rma})  # noqa: S307 (the tables' own text, compiled into rma)


def from_parameters(parameters: tuple[Described, ...]) -> inspect.Signature:
    """Return the Signature of a compiled method: `self` (positional only), then its table's."""
    made = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_ONLY)]
    for name, default, keyword_only in parameters:
        kind = inspect.Parameter.KEYWORD_ONLY if keyword_only else inspect.Parameter.POSITIONAL_OR_KEYWORD
        made.append(inspect.Parameter(name, kind, default=default_of(default)))
    return inspect.Signature(made)
