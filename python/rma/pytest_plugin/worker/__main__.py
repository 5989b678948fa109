"""Run one test worker: join the job, serve the plugin's commands, leave with the plugin."""

from __future__ import annotations

import faulthandler
import os
import signal
import sys
import threading

from ..._job.frames import Channel
from ..._job.lifeline import is_cut, watch
from ..._job.shm_files import cleanup_shm_files
from ..._job.workers import control_channel
from . import CONTROL_FD, FILES, LIFELINE_FD
from .capture import Capture
from .modules import Modules
from .run import format_exception, run_test


def main() -> int:
    channel = control_channel(CONTROL_FD)
    lifeline = int(os.environ[LIFELINE_FD])
    prefix = os.environ[FILES]
    # Every file of the worker exists before the lifeline is watched: leaving with the plugin
    # removes them, and none may be made afterwards.
    stacks = open(prefix + ".stacks", "w")
    capture = Capture(prefix)
    watch(lifeline, lambda: _leave_with_plugin(prefix), name="rma-test-lifeline")
    # A worker that fails or ends because the plugin vanished (rma.PeerError when the store
    # goes, a start that could not join, a closed channel) must still clean up, or its files
    # outlive the session: the lifeline's thread would, but ending first ends it too.
    try:
        status = _serve(channel, stacks, capture, lifeline, prefix)
    except BaseException:
        _leave_if_plugin_gone(lifeline, prefix)
        raise
    if status != 0:
        _leave_if_plugin_gone(lifeline, prefix)
    return status


# Seconds a worker that lost the plugin's channel or store waits to see the lifeline cut too
# (a plugin that dies closes its descriptors one after another).
_LIFELINE_GRACE = 2.0


def _leave_if_plugin_gone(lifeline: int, prefix: str) -> None:
    if is_cut(lifeline, within=_LIFELINE_GRACE):
        _leave_with_plugin(prefix)


def _serve(channel: Channel, stacks, capture: Capture, lifeline: int, prefix: str) -> int:
    # The plugin sends SIGUSR1 to learn where a hung test stands; faulthandler
    # answers from the signal handler itself, even while the main thread is blocked
    # in C++ code.
    faulthandler.register(signal.SIGUSR1, file=stacks, all_threads=True)
    # A crash (segfault, abort) prints the Python stacks on file descriptor 2,
    # which is the test's captured stderr while a test runs.
    faulthandler.enable(file=sys.__stderr__, all_threads=True)

    try:
        import rma

        world = rma.init()
    except BaseException as exc:  # noqa: BLE001 - tell the plugin why, then die
        channel.send({"op": "failed", "text": format_exception(exc)})
        return 1
    channel.send({"op": "ready", "pid": os.getpid(), "main_thread": threading.main_thread().ident})

    modules = Modules()
    while True:
        cmd = channel.receive()
        if cmd is None:
            # The plugin closed the channel without "exit": it is going away, and
            # the other ranks may be gone already, so skip the collective
            # rma.finalize() that a normal exit would attempt (a killed plugin removes
            # nothing: this worker's files go with it).
            Capture.flush()
            _leave_if_plugin_gone(lifeline, prefix)
            os._exit(0)
        if cmd["op"] == "exit":
            rma.finalize()
            return 0
        if cmd["op"] == "run":
            reply = run_test(world, modules, capture, cmd)
            if not rma.is_initialized():
                # The test finalized rma itself: this worker cannot serve another.
                reply["retire"] = True
            channel.send(reply)
            if reply.get("retire"):
                return 0


def _leave_with_plugin(prefix: str) -> None:
    """Remove what nobody else would remove now, then end this worker and its test's children.

    The plugin is gone (even killed): the shared-memory files named after this process and
    this worker's files go (the last worker out also removes their directory).
    """
    try:
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
