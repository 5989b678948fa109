"""A cluster: ranks of one job that run the code a notebook sends them, cell after cell."""

from __future__ import annotations

import atexit
import os
import pickle
import signal
import subprocess
import time
from dataclasses import dataclass
from typing import Any

from .._job.frames import Channel
from .._job.shm_files import cleanup_shm_files
from .._job.spawn import describe_exit, kill_groups
from .._job.store_server import StoreServer
from .._job.workers import start_worker
from ..errors import RMAError

__all__ = ["Cluster", "RankError", "RankResult", "WORKER", "CONTROL_FD"]

#: What each rank runs with ``python -m`` (worker.py).
WORKER = f"{__package__}.worker"
#: The variable that gives a rank its end of the control socket.
CONTROL_FD = "RMA_NOTEBOOK_FD"
# Seconds a rank killed at stop() may take to go.
_KILL_WAIT = 5.0


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
        self._channels: list[Channel] = []
        self._processes: list[subprocess.Popen] = []
        for rank in range(n):
            process, channel = start_worker(WORKER, rank, n, self._store, provider, CONTROL_FD)
            self._processes.append(process)
            self._channels.append(channel)
        deadline = time.monotonic() + start_timeout
        for rank, channel in enumerate(self._channels):
            channel.sock.settimeout(max(0.1, deadline - time.monotonic()))
            try:
                ready = channel.receive()
            except OSError:
                ready = None
            if ready is None:
                self.stop()
                raise RMAError(f"rma.notebook: rank {rank} did not start (see the kernel's terminal for its error)")
            channel.sock.settimeout(None)
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
        if self.stopped:
            raise RMAError("rma.notebook: the cluster was stopped")
        for channel in self._channels:
            channel.send(command)
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

    def _reply(self, rank: int, channel: Channel) -> dict:
        try:
            reply = channel.receive()
        except ConnectionError:  # cut within a reply
            reply = None
        if reply is None:
            status = describe_exit(self._processes[rank].poll())
            raise RMAError(f"rma.notebook: rank {rank} died ({status}); start a new cluster")
        return reply

    # ---- the end ----

    def stop(self) -> None:
        """Finalize and end every rank (collective on the ranks' side); idempotent."""
        for channel in self._channels:
            try:
                channel.send({"op": "exit"})
            except OSError:
                pass
        deadline = time.monotonic() + 10
        for process in self._processes:
            try:
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
        kill_groups(self._processes, _KILL_WAIT)  # those that did not finish in time
        for channel in self._channels:
            channel.close()
        self._channels = []
        self._store.close()
        cleanup_shm_files(p.pid for p in self._processes)

    @property
    def stopped(self) -> bool:
        """Whether stop() was called."""
        return not self._channels

    def __enter__(self) -> Cluster:
        return self

    def __exit__(self, *exc_info: object) -> bool:
        self.stop()
        return False

    def __repr__(self) -> str:
        return f"<rma.notebook.Cluster of {self.size} ranks{', stopped' if self.stopped else ''}>"


def _raise_errors(results: list[RankResult]) -> None:
    failed = [r for r in results if r.error]
    if failed:
        details = "\n".join(f"---- rank {r.rank} ----\n{r.error}" for r in failed)
        raise RankError(
            f"raised on rank{'s' if len(failed) > 1 else ''} {', '.join(str(r.rank) for r in failed)}:\n{details}"
        )
