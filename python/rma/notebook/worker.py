"""A rank of a notebook cluster (rma.notebook.Cluster): runs the cells it is sent.

It joins the job once, keeps one namespace across cells (with `rma`, `np` and `comm` in it),
and answers each command on its control socket. While a cell runs, what it prints goes to the
notebook line by line ("output" frames); at its end come the figures it drew ("figure" frames,
PNG) and the result: the cell's whole output, its error, and the value of its last expression.
A SIGINT (the kernel was interrupted, or another rank raised) raises KeyboardInterrupt in the
running cell; the rank lives on.
"""

from __future__ import annotations

import ast
import io
import itertools
import linecache
import os
import pickle
import signal
import sys
import threading
import traceback

from .._job.frames import Channel
from .._job.workers import control_channel
from ..check.clock import hand_out, take_in
from .cluster import CONTROL_FD


def _send(channel: Channel, message: dict) -> None:
    """Send a frame whole: a SIGINT that arrives meanwhile raises KeyboardInterrupt after it."""
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        channel.send(message)
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


class _Stream(io.TextIOBase):
    """A stdout or stderr that forwards whole lines to the notebook as they are written."""

    def __init__(self, name: str, channel: Channel, lock: threading.Lock) -> None:
        self.name = name
        self._channel = channel
        self._lock = lock  # one per channel: the cell's threads may print at once
        self._pending = ""
        self.whole: list[str] = []  # everything written, for the result

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        with self._lock:
            self.whole.append(text)
            self._pending += text
            end = self._pending.rfind("\n") + 1
            if end:
                self._send(self._pending[:end])
                self._pending = self._pending[end:]
        return len(text)

    def flush(self) -> None:
        with self._lock:
            if self._pending:
                self._send(self._pending)
                self._pending = ""

    def _send(self, text: str) -> None:
        _send(self._channel, {"op": "output", "stream": self.name, "text": text})


def _display_text(value) -> str | None:
    """What the notebook shows of a cell's last value: its repr, as IPython would show it."""
    if value is None:
        return None
    if type(value).__module__.split(".")[0] == "matplotlib":
        return None  # a figure or its parts: the figure itself is shown
    return repr(value)


def _run_cell(code: str, filename: str, namespace: dict) -> object:
    """Run a cell; return the value of its last statement if that is an expression."""
    # The source is kept where tracebacks look for it, so that they show the cell's lines.
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    tree = ast.parse(code, filename, "exec")
    last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    exec(compile(tree, filename, "exec"), namespace)
    if last is None:
        return None
    return eval(compile(ast.Expression(last.value), filename, "eval"), namespace)


def _send_figures(channel: Channel) -> None:
    """Send every figure the cell left open as PNG, then close them (as an inline backend does)."""
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is None:
        return
    for number in pyplot.get_fignums():
        image = io.BytesIO()
        pyplot.figure(number).savefig(image, format="png", bbox_inches="tight")
        _send(channel, {"op": "figure", "png": image.getvalue()})
    pyplot.close("all")


def _run(namespace: dict, command: dict, channel: Channel, filename: str) -> dict:
    take_in(command.get("clock"))  # RMA_CHECK: every rank's previous command came before this one
    lock = threading.Lock()
    out, err = _Stream("stdout", channel, lock), _Stream("stderr", channel, lock)
    reply: dict = {"op": "result", "error": None, "value": None, "display": None}
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err
    try:
        if command["op"] == "run":
            value = _run_cell(command["code"], filename, namespace)
            if value is not None:
                namespace["_"] = value
            reply["display"] = _display_text(value)
        elif command["op"] == "pull":
            reply["value"] = pickle.dumps(eval(command["expression"], namespace), pickle.HIGHEST_PROTOCOL)
        elif command["op"] == "push":
            namespace.update(pickle.loads(command["values"]))
    except BaseException as error:  # noqa: BLE001 - the notebook shows it, the rank goes on
        frames = error.__traceback__
        while frames is not None and frames.tb_frame.f_code.co_filename == __file__:
            frames = frames.tb_next  # this module's frames are not the cell's
        reply["error"] = "".join(traceback.format_exception(type(error), error, frames))
    finally:
        sys.stdout, sys.stderr = saved
        out.flush()
        err.flush()
    if command["op"] == "run":
        try:
            _send_figures(channel)
        except Exception as error:  # noqa: BLE001 - a figure that does not render is not the cell's failure
            reply["error"] = (reply["error"] or "") + f"rma.notebook: a figure could not be rendered: {error!r}\n"
    reply["stdout"], reply["stderr"] = "".join(out.whole), "".join(err.whole)
    reply["clock"] = hand_out()
    return reply


def _next_command(channel: Channel) -> dict | None:
    """Wait for the next command; None when the notebook closed the channel."""
    while True:
        try:
            return channel.receive()
        except KeyboardInterrupt:
            continue  # a rank interrupted between cells: there is nothing to interrupt


def main() -> int:
    channel = control_channel(CONTROL_FD)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    # Figures are drawn off screen and sent to the notebook as images, whatever backend
    # the kernel's environment names (an inline backend only works inside a kernel).
    os.environ["MPLBACKEND"] = "Agg"
    import numpy as np

    import rma

    comm = rma.init()
    namespace = {"__name__": "__rma_rank__", "rma": rma, "np": np, "comm": comm}
    channel.send({"op": "ready", "pid": os.getpid()})
    cells = itertools.count(1)
    while True:
        command = _next_command(channel)
        if command is None:  # the notebook is gone: leave without the collective goodbye
            os._exit(0)
        if command["op"] == "exit":
            rma.finalize()
            channel.send({"op": "bye"})
            return 0
        filename = f"<cell {next(cells)}>" if command["op"] == "run" else "<rma.notebook>"
        channel.send(_run(namespace, command, channel, filename))


if __name__ == "__main__":
    sys.exit(main())
