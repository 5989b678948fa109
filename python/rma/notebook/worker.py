"""A rank of a notebook cluster (rma.notebook.Cluster): runs the cells it is sent.

It joins the job once, keeps one namespace across cells (with `rma`, `np` and `comm` in it),
and answers each command on its control socket with the cell's output or error. A SIGINT
(the kernel was interrupted) raises KeyboardInterrupt in the running cell; the rank lives on.
"""

from __future__ import annotations

import contextlib
import io
import os
import pickle
import signal
import sys
import traceback

from .._job.frames import Channel
from .._job.workers import control_channel
from .cluster import CONTROL_FD


def _run(namespace: dict, command: dict) -> dict:
    out, err = io.StringIO(), io.StringIO()
    reply: dict = {"error": None, "value": None}
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            if command["op"] == "run":
                exec(compile(command["code"], "<cell>", "exec"), namespace)
            elif command["op"] == "pull":
                reply["value"] = pickle.dumps(eval(command["expression"], namespace), pickle.HIGHEST_PROTOCOL)
            elif command["op"] == "push":
                namespace.update(pickle.loads(command["values"]))
    except BaseException as error:  # noqa: BLE001 - the notebook shows it, the rank goes on
        frames = error.__traceback__.tb_next if error.__traceback__ else None  # skip this function
        reply["error"] = "".join(traceback.format_exception(type(error), error, frames))
    reply["stdout"], reply["stderr"] = out.getvalue(), err.getvalue()
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
    import numpy as np

    import rma

    comm = rma.init()
    namespace = {"__name__": "__rma_rank__", "rma": rma, "np": np, "comm": comm}
    channel.send({"op": "ready", "pid": os.getpid()})
    while True:
        command = _next_command(channel)
        if command is None:  # the notebook is gone: leave without the collective goodbye
            os._exit(0)
        if command["op"] == "exit":
            rma.finalize()
            channel.send({"op": "bye"})
            return 0
        channel.send(_run(namespace, command))


if __name__ == "__main__":
    sys.exit(main())
