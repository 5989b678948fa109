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
import socket
import struct
import sys
import traceback


def send(channel: socket.socket, message: dict) -> None:
    data = pickle.dumps(message, pickle.HIGHEST_PROTOCOL)
    channel.sendall(struct.pack("!Q", len(data)) + data)


def receive(channel: socket.socket, ignore_interrupts: bool = False) -> dict | None:
    """Return the next message, or None when the other end closed the channel."""
    header = _exactly(channel, 8, ignore_interrupts)
    if header is None:
        return None
    data = _exactly(channel, struct.unpack("!Q", header)[0], ignore_interrupts)
    return None if data is None else pickle.loads(data)


def _exactly(channel: socket.socket, count: int, ignore_interrupts: bool) -> bytes | None:
    chunks, remaining = [], count
    while remaining:
        try:
            chunk = channel.recv(min(remaining, 1 << 20))
        except KeyboardInterrupt:
            if not ignore_interrupts:
                raise
            continue  # a rank interrupted between cells: there is nothing to interrupt
        if not chunk:
            return None
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


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


def main() -> int:
    channel = socket.socket(fileno=int(os.environ["RMA_NOTEBOOK_FD"]))
    os.set_inheritable(channel.fileno(), False)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    import numpy as np

    import rma

    comm = rma.init()
    namespace = {"__name__": "__rma_rank__", "rma": rma, "np": np, "comm": comm}
    send(channel, {"op": "ready", "pid": os.getpid()})
    while True:
        command = receive(channel, ignore_interrupts=True)
        if command is None:  # the notebook is gone: leave without the collective goodbye
            os._exit(0)
        if command["op"] == "exit":
            rma.finalize()
            send(channel, {"op": "bye"})
            return 0
        send(channel, _run(namespace, command))


if __name__ == "__main__":
    sys.exit(main())
