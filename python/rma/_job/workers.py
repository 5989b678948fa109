"""Worker ranks: rank processes that a controller drives over a control socket.

The pytest plugin's test workers and the notebook's ranks are workers: instead of running a
program, each joins the job and serves the messages its controller sends it (frames.py,
pickled), until told to exit or until the socket ends.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Callable, Sequence

from .frames import Channel
from .spawn import rank_environment, start_rank
from .store_server import StoreServer

__all__ = ["start_worker", "control_channel"]


def start_worker(
    module: str,
    rank: int,
    size: int,
    store: StoreServer,
    provider: str | None,
    control_variable: str,
    *,
    env: dict[str, str] | None = None,
    pass_fds: Sequence[int] = (),
    wrap: Callable[[list[str], dict[str, str]], list[str]] | None = None,
    **popen,
) -> tuple[subprocess.Popen, Channel]:
    """Start ``python -m module`` as rank `rank` of the job of `store`; return it and its channel.

    The worker finds its end of the control socket in the environment variable
    `control_variable`; `env` adds variables, `pass_fds` descriptors, `popen` arguments of
    subprocess.Popen (stdout, stderr). wrap(argv, environment) turns the command line into the
    one that starts it (on another host, say), and may change the environment it gets.
    """
    ours, theirs = socket.socketpair()
    try:
        environment = rank_environment(rank, size, store.reachable_address, store.secret, provider)
        environment[control_variable] = str(theirs.fileno())
        environment.update(env or {})
        argv = [sys.executable, "-m", module]
        proc = start_rank(
            wrap(argv, environment) if wrap else argv, environment, pass_fds=(theirs.fileno(), *pass_fds), **popen
        )
    except BaseException:
        ours.close()
        raise
    finally:
        theirs.close()
    return proc, Channel(ours)


def control_channel(control_variable: str) -> Channel:
    """Return, in a worker, the channel to its controller (see start_worker)."""
    sock = socket.socket(fileno=int(os.environ[control_variable]))
    # It may not reach processes the worker starts: they would keep the channel open after
    # the worker is gone.
    os.set_inheritable(sock.fileno(), False)
    return Channel(sock)
