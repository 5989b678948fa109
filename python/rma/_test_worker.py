"""One rank of a pool of test workers of the rma pytest plugin (see rma.pytest_plugin).

The plugin starts N of these with ``python -m rma._test_worker`` and the usual rank
environment (RMA_RANK, RMA_SIZE, RMA_STORE, RMA_SECRET, RMA_PROVIDER) plus:

* ``RMA_TEST_CONTROL_FD``: this worker's end of a socketpair to the plugin.  Frames
  both ways are a 4-byte big-endian length and a pickle of a dict.
* ``RMA_TEST_LIFELINE_FD``: the read end of a pipe whose write end only the plugin
  holds.  End of file means the plugin's process is gone: the worker then kills its
  own process group, so that no worker outlives a pytest killed by SIGKILL.
* ``RMA_TEST_FILES``: a path prefix for the worker's files: ``.stacks`` (faulthandler
  dumps on SIGUSR1), ``.out`` / ``.err`` (file descriptors 1 and 2 during a test).

The worker joins the job once (``rma.init()``), says ``ready``, and then serves
``run`` commands until ``exit`` (then ``rma.finalize()``) or the end of the socket.
This module also holds the framing helpers the plugin uses on its side.
"""

from __future__ import annotations

import ast
import faulthandler
import importlib
import importlib.util
import os
import pickle
import re
import select
import signal
import socket
import struct
import sys
import threading
import time
import traceback
import warnings

__all__ = ["send_frame", "FrameReader", "PROTECTED_ENV"]

_HEADER = struct.Struct(">I")
# Largest frame accepted: replies carry captured output, which the worker cuts down
# to _MAX_OUTPUT first, so this only guards against a corrupted stream.
_MAX_FRAME = 1 << 30
# Keep at most this much of each captured stream of one test (the end of it).
_MAX_OUTPUT = 1 << 20

# Variables that make this process the rank it is: never taken over from the
# plugin's environment, which is otherwise mirrored for every test.
PROTECTED_ENV = frozenset(
    {
        "RMA_RANK",
        "RMA_SIZE",
        "RMA_STORE",
        "RMA_SECRET",
        "RMA_PROVIDER",
        "RMA_TEST_CONTROL_FD",
        "RMA_TEST_LIFELINE_FD",
        "RMA_TEST_FILES",
        "PYTHONUNBUFFERED",
    }
)


# --------------------------------------------------------------------------
# framing (used by both sides)


def send_frame(sock: socket.socket, obj: object) -> None:
    """Send one length-prefixed pickle; obj may also be bytes pickled already."""
    payload = obj if isinstance(obj, bytes) else pickle.dumps(obj, pickle.HIGHEST_PROTOCOL)
    sock.sendall(_HEADER.pack(len(payload)) + payload)


class FrameReader:
    """Split a byte stream into frames; feed() it whatever recv() returned."""

    def __init__(self) -> None:
        self._buf = bytearray()

    def feed(self, data: bytes) -> list[object]:
        self._buf += data
        frames = []
        while len(self._buf) >= _HEADER.size:
            (length,) = _HEADER.unpack_from(self._buf)
            if length > _MAX_FRAME:
                raise ConnectionError(f"frame of {length} bytes exceeds the limit")
            end = _HEADER.size + length
            if len(self._buf) < end:
                break
            frames.append(pickle.loads(bytes(self._buf[_HEADER.size : end])))
            del self._buf[:end]
        return frames


def _recv_frame(sock: socket.socket, reader: FrameReader, backlog: list) -> object | None:
    """Block until one frame arrives; None at end of file."""
    while not backlog:
        data = sock.recv(1 << 16)
        if not data:
            return None
        backlog.extend(reader.feed(data))
    return backlog.pop(0)


# --------------------------------------------------------------------------
# importing test modules


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


class _Modules:
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


# --------------------------------------------------------------------------
# capturing a test's output


class _Capture:
    """Point file descriptors 1 and 2 at files while a test runs.

    Capturing the descriptors rather than sys.stdout also catches what C code,
    libfabric and child processes write, and what faulthandler writes should the
    worker crash mid-test; the plugin reads the files itself when that happens.
    """

    def __init__(self, prefix: str) -> None:
        self._files = [open(prefix + ".out", "w+b"), open(prefix + ".err", "w+b")]
        self._saved: list[int] = []

    def start(self) -> None:
        for f in self._files:
            f.seek(0)
            f.truncate()
        self._flush()
        self._saved = [os.dup(1), os.dup(2)]
        os.dup2(self._files[0].fileno(), 1)
        os.dup2(self._files[1].fileno(), 2)

    def stop(self) -> tuple[str, str]:
        self._flush()
        for fd, saved in zip((1, 2), self._saved):
            os.dup2(saved, fd)
            os.close(saved)
        self._saved = []
        texts = []
        for f in self._files:
            size = f.seek(0, os.SEEK_END)
            f.seek(max(0, size - _MAX_OUTPUT))
            data = f.read()
            if size > _MAX_OUTPUT:
                data = b"[... output cut to its last %d bytes ...]\n" % _MAX_OUTPUT + data
            texts.append(data.decode("utf-8", errors="replace"))
        return texts[0], texts[1]

    @staticmethod
    def _flush() -> None:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError, AttributeError):
                pass


# --------------------------------------------------------------------------
# running one test


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


def _resolve(modules: _Modules, cmd: dict):
    module = modules.get(cmd["path"], cmd["module"])
    if cmd["cls"] is None:
        return getattr(module, cmd["name"])
    owner = module
    for part in cmd["cls"].split("."):
        owner = getattr(owner, part)
    # pytest makes a fresh instance of the class for every test; so does each rank.
    return getattr(owner(), cmd["name"])


def _format_exception(exc: BaseException) -> str:
    """Format a traceback without this module's own frames at the top of it."""
    tb = exc.__traceback__
    # Keep this module's frames when the error arose in them (a bug here).
    while tb is not None and tb.tb_next is not None and tb.tb_frame.f_code.co_filename == __file__:
        tb = tb.tb_next
    return "".join(traceback.format_exception(type(exc), exc, tb))


def _warning_record(w: warnings.WarningMessage) -> dict:
    category = w.category
    return {
        "category": (category.__module__, category.__qualname__),
        "message": str(w.message),
        "filename": w.filename,
        "lineno": w.lineno,
    }


def _run(world, modules: _Modules, capture: _Capture, cmd: dict) -> dict:
    import pytest

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
        text = _format_exception(exc) if exc.pytrace else str(exc.msg)
        reply.update(outcome="failed", text=text)
    except BaseException as exc:  # noqa: BLE001 - report everything, even SystemExit
        reply.update(outcome="failed", text=_format_exception(exc))
    finally:
        reply["duration"] = time.perf_counter() - start
        reply["stdout"], reply["stderr"] = capture.stop()
    reply["warnings"] = [_warning_record(w) for w in recorded]
    return reply


def main() -> int:
    control = socket.socket(fileno=int(os.environ["RMA_TEST_CONTROL_FD"]))
    lifeline = int(os.environ["RMA_TEST_LIFELINE_FD"])
    prefix = os.environ["RMA_TEST_FILES"]
    # Neither descriptor may reach processes a test starts: they would keep the
    # worker's channel, or the plugin's lifeline, open after the worker is gone.
    os.set_inheritable(control.fileno(), False)
    os.set_inheritable(lifeline, False)
    # Every file of the worker exists before the lifeline is watched: leaving with the plugin
    # removes them, and none may be made afterwards.
    stacks = open(prefix + ".stacks", "w")
    capture = _Capture(prefix)
    threading.Thread(
        target=_watch_lifeline, args=(lifeline, prefix), name="rma-test-lifeline", daemon=True
    ).start()

    try:
        return _serve(control, stacks, capture)
    except BaseException:
        # A worker that fails because the plugin vanished (rma.PeerError when the store
        # goes) must still clean up, or its files outlive the session.
        if _plugin_gone(lifeline):
            _leave_with_plugin(prefix)
        raise


def _plugin_gone(lifeline: int) -> bool:
    """Return True if the plugin's end of the lifeline is closed (nothing is ever written)."""
    try:
        readable, _, _ = select.select([lifeline], [], [], 0)
        return bool(readable)
    except (OSError, ValueError):
        return True


def _serve(control: socket.socket, stacks, capture: _Capture) -> int:
    # The plugin sends SIGUSR1 to learn where a hung test stands; faulthandler
    # answers from the signal handler itself, even while the main thread is blocked
    # in C++ code.
    faulthandler.register(signal.SIGUSR1, file=stacks, all_threads=True)
    # A crash (segfault, abort) prints the Python stacks on file descriptor 2,
    # which is the test's captured stderr while a test runs.
    faulthandler.enable(file=sys.__stderr__, all_threads=True)

    reader = FrameReader()
    backlog: list = []
    try:
        import rma

        world = rma.init()
    except BaseException as exc:  # noqa: BLE001 - tell the plugin why, then die
        send_frame(control, {"op": "failed", "text": _format_exception(exc)})
        return 1
    send_frame(control, {"op": "ready", "pid": os.getpid(), "main_thread": threading.main_thread().ident})

    modules = _Modules()
    while True:
        cmd = _recv_frame(control, reader, backlog)
        if cmd is None:
            # The plugin closed the channel without "exit": it is going away, and
            # the other ranks may be gone already, so skip the collective
            # rma.finalize() that a normal exit would attempt.
            _Capture._flush()
            os._exit(0)
        if cmd["op"] == "exit":
            rma.finalize()
            return 0
        if cmd["op"] == "run":
            reply = _run(world, modules, capture, cmd)
            if not rma.is_initialized():
                # The test finalized rma itself: this worker cannot serve another.
                reply["retire"] = True
            send_frame(control, reply)
            if reply.get("retire"):
                return 0


def _watch_lifeline(fd: int, prefix: str) -> None:
    try:
        while os.read(fd, 1):
            pass
    except OSError:
        pass
    _leave_with_plugin(prefix)


def _leave_with_plugin(prefix: str) -> None:
    """Remove what nobody else would remove now, then end this worker and its test's children.

    The plugin is gone (even killed): the shared-memory files named after this process and
    this worker's files go (the last worker out also removes their directory).
    """
    try:
        from ._job.shm_files import cleanup_shm_files

        cleanup_shm_files([os.getpid()])
        for suffix in (".log", ".out", ".err", ".stacks"):
            try:
                os.unlink(prefix + suffix)
            except OSError:
                pass
        try:
            os.rmdir(os.path.dirname(prefix))
        except OSError:
            pass
    finally:
        os.killpg(os.getpgrp(), signal.SIGKILL)


if __name__ == "__main__":
    sys.exit(main())
