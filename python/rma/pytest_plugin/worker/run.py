"""Run one test on a rank, as pytest would in its own process, and describe what happened."""

from __future__ import annotations

import os
import pickle
import re
import sys
import time
import traceback
import warnings

import pytest

from . import CONTROL_FD, FILES, LIFELINE_FD
from .capture import Capture
from .modules import Modules

__all__ = ["run_test", "format_exception", "PROTECTED_ENV"]

_HERE = os.path.dirname(os.path.abspath(__file__))
# Longest headline of a failure (the line pytest's short summary shows).
_HEADLINE_CHARS = 200

# Variables that make this process the rank it is: never taken over from the
# plugin's environment, which is otherwise mirrored for every test.
PROTECTED_ENV = frozenset(
    {
        "RMA_RANK",
        "RMA_SIZE",
        "RMA_STORE",
        "RMA_SECRET",
        "RMA_PROVIDER",
        "RMA_TRANSPORT",
        CONTROL_FD,
        LIFELINE_FD,
        FILES,
        "PYTHONUNBUFFERED",
    }
)


def _sync_process_state(cmd: dict) -> None:
    """Take over the plugin's cwd, environment and sys.path, as a test in-process would see them."""
    try:
        os.chdir(cmd["cwd"])
    except OSError:
        pass
    env = cmd["env"]
    for key in list(os.environ):
        if key not in env and key not in PROTECTED_ENV:
            del os.environ[key]
    for key, value in env.items():
        if key not in PROTECTED_ENV and os.environ.get(key) != value:
            os.environ[key] = value
    # pytest inserted the test and conftest directories and any "pythonpath" entries;
    # keep the plugin's order and append whatever only this process had.
    wanted = list(cmd["sys_path"])
    seen = set(wanted)
    sys.path[:] = wanted + [p for p in sys.path if p not in seen]


def _apply_warning_filters(blob: bytes | None) -> None:
    """Use the filters pytest had in force for this test (e.g. filterwarnings = error)."""
    if blob is None:
        return
    try:
        filters = pickle.loads(blob)
    except Exception:  # noqa: BLE001 - e.g. a category this process cannot import
        return
    warnings.resetwarnings()
    # Each call inserts at the front: go from the last filter to the first.
    for action, message, category, module, lineno in reversed(filters):
        if message is None and module is None:
            warnings.simplefilter(action, category, lineno)
        else:
            warnings.filterwarnings(action, _pattern(message), category, _pattern(module), lineno)


def _pattern(part) -> str:
    """Return the regular expression of a filter field for warnings.filterwarnings()."""
    if part is None:
        return ""
    if isinstance(part, str):
        # Filters made by the interpreter itself hold plain strings that must
        # match exactly, not regular expressions.
        return re.escape(part) + r"\Z"
    return part.pattern


def _resolve(modules: Modules, cmd: dict):
    module = modules.get(cmd["path"], cmd["module"])
    if cmd["cls"] is None:
        return getattr(module, cmd["name"])
    owner = module
    for part in cmd["cls"].split("."):
        owner = getattr(owner, part)
    # pytest makes a fresh instance of the class for every test; so does each rank.
    return getattr(owner(), cmd["name"])


def format_exception(exc: BaseException) -> str:
    """Format a traceback without the worker's own frames at the top of it."""
    tb = exc.__traceback__
    # Keep the worker's frames when the error arose in them (a bug here).
    while tb is not None and tb.tb_next is not None and _in_worker(tb.tb_frame.f_code.co_filename):
        tb = tb.tb_next
    return "".join(traceback.format_exception(type(exc), exc, tb))


def _headline(exc: BaseException) -> str:
    """The exception in one line, as pytest's summary shows it: "AssertionError: assert 1 == 2"."""
    text = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    line = text.splitlines()[0] if text else type(exc).__name__
    return line if len(line) <= _HEADLINE_CHARS else line[: _HEADLINE_CHARS - 3] + "..."


def _in_worker(path: str) -> bool:
    return os.path.dirname(os.path.abspath(path)) == _HERE


def _warning_record(w: warnings.WarningMessage) -> dict:
    category = w.category
    return {
        "category": (category.__module__, category.__qualname__),
        "message": str(w.message),
        "filename": w.filename,
        "lineno": w.lineno,
    }


def run_test(world, modules: Modules, capture: Capture, cmd: dict) -> dict:
    # A fresh communicator per test, made before anything can fail, so that every
    # rank takes part in this collective and no message of an earlier test (sent
    # on an earlier communicator) can reach this one.
    comm = world.dup()
    reply = {"op": "result", "seq": cmd["seq"], "outcome": "passed", "text": "", "duration": 0.0}
    recorded: list[warnings.WarningMessage] = []
    capture.start()
    start = time.perf_counter()
    try:
        with warnings.catch_warnings(record=True) as recorded:
            # Record every warning until the session's own filters (e.g.
            # filterwarnings = error) take over for the call itself; the plugin
            # re-emits what was recorded, for pytest's warnings summary.
            warnings.simplefilter("always")
            _sync_process_state(cmd)
            function = _resolve(modules, cmd)
            kwargs = pickle.loads(cmd["kwargs"])
            _apply_warning_filters(cmd.get("warning_filters"))
            if cmd["pass_comm"]:
                kwargs["comm"] = comm
            start = time.perf_counter()
            function(**kwargs)
    except pytest.skip.Exception as exc:
        reply.update(outcome="skipped", text=str(exc.msg or "skipped"))
    except pytest.xfail.Exception as exc:
        reply.update(outcome="xfailed", text=str(exc.msg or ""))
    except pytest.fail.Exception as exc:
        text = format_exception(exc) if exc.pytrace else str(exc.msg)
        reply.update(outcome="failed", text=text, headline=_headline(exc))
    except BaseException as exc:  # noqa: BLE001 - report everything, even SystemExit
        reply.update(outcome="failed", text=format_exception(exc), headline=_headline(exc))
    finally:
        reply["duration"] = time.perf_counter() - start
        reply["stdout"], reply["stderr"] = capture.stop()
    reply["warnings"] = [_warning_record(w) for w in recorded]
    return reply
