"""Ranks that persist across notebook cells.

    import rma.notebook
    cluster = rma.notebook.start(4)        # 4 ranks; also enables the %%rma cell magic

    %%rma
    win = rma.Window.allocate(comm, 8, np.int64)     # runs on every rank; output grouped by rank
    print(comm.rank, win.local)

    boards = cluster.pull("win.local")     # every rank's value, as a list
    cluster.push(step=3)                   # set a variable on every rank
    cluster.run("x = comm.allgather(step)")
    cluster.stop()                         # also done when the kernel exits

Each rank keeps its own namespace, with `rma`, `np` and `comm` (its world communicator) in it.
A rank's exception shows its traceback under its rank number, and %%rma then raises
rma.notebook.RankError. Interrupting the kernel interrupts the cell on every rank
(KeyboardInterrupt in the ranks' Python code) and leaves the job running.
"""

from __future__ import annotations

import atexit
import os
import pickle
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Any

from ._notebook_worker import receive, send
from ._job.shm_files import cleanup_shm_files
from ._job.store_server import StoreServer
from .errors import RMAError

__all__ = ["Cluster", "RankError", "RankResult", "start", "current"]

_current: Cluster | None = None


class RankError(RMAError):
    """A cell raised on one or more ranks."""


@dataclass
class RankResult:
    """What one rank made of a cell."""

    rank: int
    stdout: str
    stderr: str
    error: str | None
    value: Any = None


class Cluster:
    """Start `n` ranks of one job that serve cells until stop()."""

    def __init__(self, n: int = 4, *, provider: str | None = None, start_timeout: float = 60) -> None:
        if n < 1:
            raise ValueError(f"rma.notebook: a cluster needs at least one rank, not {n}")
        self.size = n
        self._store = StoreServer(size=n)
        self._store.start()
        self._channels: list[socket.socket] = []
        self._processes: list[subprocess.Popen] = []
        for rank in range(n):
            mine, theirs = socket.socketpair()
            env = dict(os.environ, RMA_RANK=str(rank), RMA_SIZE=str(n), RMA_STORE=self._store.address,
                       RMA_SECRET=self._store.secret, RMA_NOTEBOOK_FD=str(theirs.fileno()), PYTHONUNBUFFERED="1")
            if provider:
                env["RMA_PROVIDER"] = provider
            self._processes.append(subprocess.Popen(
                [sys.executable, "-m", "rma._notebook_worker"], env=env, pass_fds=[theirs.fileno()],
                stdin=subprocess.DEVNULL, start_new_session=True,
            ))
            theirs.close()
            self._channels.append(mine)
        deadline = time.monotonic() + start_timeout
        for rank, channel in enumerate(self._channels):
            channel.settimeout(max(0.1, deadline - time.monotonic()))
            try:
                ready = receive(channel)
            except OSError:
                ready = None
            if ready is None:
                self.stop()
                raise RMAError(f"rma.notebook: rank {rank} did not start (see the kernel's terminal for its error)")
            channel.settimeout(None)
        atexit.register(self.stop)

    # ---- running code on every rank ----

    def run(self, code: str) -> list[RankResult]:
        """Run `code` on every rank (in each rank's namespace); return what each made of it."""
        return self._everywhere({"op": "run", "code": code})

    def pull(self, expression: str) -> list[Any]:
        """Return the value of `expression` on every rank, in rank order."""
        results = self._everywhere({"op": "pull", "expression": expression})
        _raise_errors(results)
        return [pickle.loads(r.value) for r in results]

    def push(self, **values: Any) -> None:
        """Set variables on every rank."""
        _raise_errors(self._everywhere({"op": "push", "values": pickle.dumps(values)}))

    def _everywhere(self, command: dict) -> list[RankResult]:
        if not self._channels:
            raise RMAError("rma.notebook: the cluster was stopped")
        for channel in self._channels:
            send(channel, command)
        replies: list[dict | None] = [None] * self.size
        interrupted = False
        while any(reply is None for reply in replies):
            try:
                for rank, channel in enumerate(self._channels):
                    if replies[rank] is None:
                        replies[rank] = self._reply(rank, channel)
            except KeyboardInterrupt:
                # The kernel was interrupted: interrupt the cell on every rank, then collect
                # their (interrupted) results; the ranks stay up.
                if interrupted:
                    raise
                interrupted = True
                for process in self._processes:
                    if process.poll() is None:
                        os.kill(process.pid, signal.SIGINT)
        return [
            RankResult(rank, r["stdout"], r["stderr"], r["error"], r.get("value"))
            for rank, r in enumerate(replies)  # type: ignore[union-attr]
        ]

    def _reply(self, rank: int, channel: socket.socket) -> dict:
        reply = receive(channel)
        if reply is None:
            status = self._processes[rank].poll()
            raise RMAError(f"rma.notebook: rank {rank} died (exit status {status}); start a new cluster")
        return reply

    # ---- the end ----

    def stop(self) -> None:
        """Finalize and end every rank (collective on the ranks' side); idempotent."""
        global _current
        for channel in self._channels:
            try:
                send(channel, {"op": "exit"})
            except OSError:
                pass
        deadline = time.monotonic() + 10
        for process in self._processes:
            try:
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        for channel in self._channels:
            channel.close()
        self._channels = []
        self._store.close()
        cleanup_shm_files(p.pid for p in self._processes)
        if _current is self:
            _current = None

    def __enter__(self) -> Cluster:
        return self

    def __exit__(self, *exc_info: object) -> bool:
        self.stop()
        return False

    def __repr__(self) -> str:
        return f"<rma.notebook.Cluster of {self.size} ranks{'' if self._channels else ', stopped'}>"


def show(results: list[RankResult]) -> None:
    """Print each rank's output under its rank number, then its traceback if it raised."""
    for result in results:
        text = result.stdout + result.stderr
        if text or result.error:
            print(f"[rank {result.rank}]")
            if text:
                print(text, end="" if text.endswith("\n") else "\n")
            if result.error:
                print(result.error, end="", file=sys.stderr)


def _raise_errors(results: list[RankResult]) -> None:
    failed = [r for r in results if r.error]
    if failed:
        details = "\n".join(f"---- rank {r.rank} ----\n{r.error}" for r in failed)
        raise RankError(f"raised on rank{'s' if len(failed) > 1 else ''} "
                        f"{', '.join(str(r.rank) for r in failed)}:\n{details}")


def start(n: int = 4, *, provider: str | None = None) -> Cluster:
    """Start a cluster of `n` ranks, make it the one %%rma uses, and enable %%rma."""
    global _current
    if _current is not None:
        _current.stop()
    _current = Cluster(n, provider=provider)
    _register_magic()
    return _current


def current() -> Cluster:
    """Return the cluster %%rma uses."""
    if _current is None:
        raise RMAError("rma.notebook: no cluster is running; call rma.notebook.start(n)")
    return _current


def _rma_cell(line: str, cell: str) -> None:
    """%%rma: run the cell on every rank; show the output grouped by rank."""
    results = current().run(cell)
    show(results)
    if any(r.error for r in results):
        raise RankError(f"the cell raised on rank(s) {', '.join(str(r.rank) for r in results if r.error)}")


def _register_magic() -> None:
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is not None:
        shell.register_magic_function(_rma_cell, magic_kind="cell", magic_name="rma")


def load_ipython_extension(ipython) -> None:
    """`%load_ext rma.notebook` enables %%rma (start a cluster with rma.notebook.start)."""
    ipython.register_magic_function(_rma_cell, magic_kind="cell", magic_name="rma")
