"""One source for each compiled method's signature: its parameter table
(src/bindings/parameters.hpp), which matches the method's arguments and which the method carries
as `_parameters`. Everything else that states the signature is compared with it here:

- python/rma/_core.pyi, parsed (names, order, keyword-only, defaults: a literal default must
  be the table's, `...` stands for a default that is a constant of rma such as rma.Op.SUM);
- inspect.signature of the method, which rma._signatures builds from the table;
- the Python methods that take the same call and pass it on: the window kinds of RMA_CHECK and
  RMA_MODEL=separate and RMA_CHECK's communicator, which override the compiled calls, and
  rma.compat's MPI.Win, whose compiled calls hand every form they do not serve to the Python
  method of the same name with a leading underscore (`Put` to `_Put`), with the same arguments.
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

import rma
from rma import _signatures, _window_kinds
from rma._native import _core
from rma.check.comm import CheckedComm
from rma.compat import MPI

STUB = Path(rma.__file__).resolve().parent / "_core.pyi"


def _compiled_methods() -> dict[str, dict[str, tuple]]:
    """Return every compiled method's table, by class and method name."""
    found: dict[str, dict[str, tuple]] = {}
    for class_name, cls in vars(_core).items():
        if isinstance(cls, type):
            for name, member in vars(cls).items():
                parameters = getattr(member, "_parameters", None)
                if parameters is not None:
                    found.setdefault(class_name, {})[name] = parameters
    return found


COMPILED = _compiled_methods()
EVERY_METHOD = [(cls, name) for cls, methods in sorted(COMPILED.items()) for name in sorted(methods)]


def _form(entries) -> str:
    """Return a signature's text without self: `(a, b=0, *, c=None)`. entries: (name,
    default text or None, keyword-only), and a "/" entry where positional-only ones end."""
    parts: list[str] = []
    for name, default, keyword_only in entries:
        if keyword_only and "*" not in parts:
            parts.append("*")
        parts.append(name if default is None else f"{name}={default}")
    return "(" + ", ".join(parts) + ")"


def _stub_text(default: str) -> str:
    """A default as a stub writes it: the literal's repr, else `...` (a constant of rma)."""
    try:
        return repr(ast.literal_eval(default))
    except ValueError:
        return "..."


def _table_in_stub_form(parameters) -> str:
    return _form((name, None if d is None else _stub_text(d), kw) for name, d, kw in parameters)


def _table_with_values(parameters) -> str:
    return _form((name, None if d is None else repr(_signatures.default_of(d)), kw) for name, d, kw in parameters)


def _stub_methods() -> dict[str, dict[str, ast.FunctionDef]]:
    classes = {}
    for node in ast.parse(STUB.read_text()).body:
        if isinstance(node, ast.ClassDef):
            classes[node.name] = {item.name: item for item in node.body if isinstance(item, ast.FunctionDef)}
    return classes


def _stub_form(function: ast.FunctionDef) -> str:
    arguments = function.args
    positional = arguments.posonlyargs + arguments.args
    assert positional and positional[0].arg == "self", f"{function.name}: the stub's first parameter is not self"
    assert arguments.vararg is None and arguments.kwarg is None, f"{function.name}: *args or **kwargs in the stub"
    defaults = [None] * (len(positional) - len(arguments.defaults)) + list(arguments.defaults)
    entries = [
        (node.arg, None if default is None else _stub_default(default), False)
        for node, default in zip(positional[1:], defaults[1:])
    ]
    if len(arguments.posonlyargs) > 1:  # positional-only parameters besides self: no table has them
        entries.insert(len(arguments.posonlyargs) - 1, ("/", None, False))
    for node, default in zip(arguments.kwonlyargs, arguments.kw_defaults):
        entries.append((node.arg, None if default is None else _stub_default(default), True))
    return _form(entries)


def _stub_default(node: ast.expr) -> str:
    if isinstance(node, ast.Constant) and node.value is Ellipsis:
        return "..."
    return _stub_text(ast.unparse(node))


def _python_form(function) -> str:
    """The form of a Python method's signature without self, its defaults' values as repr."""
    parameters = list(inspect.signature(function).parameters.values())[1:]
    entries = []
    for parameter in parameters:
        assert parameter.kind not in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD), f"{function}: *args"
        default = None if parameter.default is parameter.empty else repr(parameter.default)
        entries.append((parameter.name, default, parameter.kind is parameter.KEYWORD_ONLY))
    return _form(entries)


def test_the_compiled_classes_carry_their_tables():
    # (So that the tests below compare every compiled method, not none.)
    assert sorted(COMPILED) == ["Comm", "FacadeWindow", "MessageRequest", "Window"]
    assert {"put", "fence", "wait_until", "_check_start"} <= set(COMPILED["Window"])
    assert COMPILED["Window"]["put"] == (
        ("origin", None, False),
        ("target_rank", None, False),
        ("target_disp", "0", False),
        ("target", "None", True),
    )


@pytest.mark.parametrize(("cls", "name"), EVERY_METHOD)
def test_the_stub_says_what_the_table_says(cls, name):
    stub = _stub_methods().get(cls, {}).get(name)
    assert stub is not None, f"_core.pyi has no {cls}.{name}"
    table = _table_in_stub_form(COMPILED[cls][name])
    assert _stub_form(stub) == table, f"{cls}.{name}: _core.pyi has {_stub_form(stub)}, the compiled table {table}"


@pytest.mark.parametrize(("cls", "name"), EVERY_METHOD)
def test_the_signature_is_the_tables(cls, name):
    method = getattr(getattr(_core, cls), name)
    signature = inspect.signature(method)
    assert next(iter(signature.parameters.values())).kind is inspect.Parameter.POSITIONAL_ONLY
    assert _python_form(method) == _table_with_values(COMPILED[cls][name]), f"{cls}.{name}"


def _overrides(cls: type, compiled: type) -> list[tuple[str, str]]:
    """(class, method) of every Python class in cls's MRO that overrides a compiled method of
    `compiled`."""
    found = []
    for owner in cls.__mro__:
        if owner.__module__ != "rma._core" and owner is not object:
            found += [(owner.__qualname__, name) for name in vars(owner) if name in COMPILED[compiled.__name__]]
    return found


# Every Python class that may stand between a program and a compiled call: the window with
# both kinds composed (RMA_CHECK's and RMA_MODEL=separate's), and RMA_CHECK's communicator.
KINDS = [(_window_kinds._composed(rma.Window, True, True), _core.Window), (CheckedComm, _core.Comm)]
OVERRIDES = [(cls, compiled, owner, name) for cls, compiled in KINDS for owner, name in _overrides(cls, compiled)]


def test_the_kinds_override_compiled_calls():
    # (So that the test below has something to compare.)
    names = {(owner, name) for _, _, owner, name in OVERRIDES}
    assert {("Separate", "fence"), ("Separate", "lock"), ("Checked", "free"), ("CheckedComm", "sendrecv")} <= names


@pytest.mark.parametrize(
    ("cls", "compiled", "owner", "name"), OVERRIDES, ids=[f"{owner}.{name}" for _, _, owner, name in OVERRIDES]
)
def test_the_kinds_take_the_compiled_parameters(cls, compiled, owner, name):
    override = next(vars(c)[name] for c in cls.__mro__ if c.__qualname__ == owner)
    table = _table_with_values(COMPILED[compiled.__name__][name])
    assert _python_form(override) == table, f"{owner}.{name} takes {_python_form(override)}, the compiled {table}"


@pytest.mark.parametrize("name", sorted(COMPILED["FacadeWindow"]))
def test_the_facades_python_path_takes_the_compiled_parameters(name):
    general = getattr(MPI.Win, f"_{name}", None)
    assert general is not None, f"MPI.Win has no _{name} for the forms the compiled {name} leaves"
    table = _table_with_values(COMPILED["FacadeWindow"][name])
    assert _python_form(general) == table, f"MPI.Win._{name} takes {_python_form(general)}, the compiled {table}"
