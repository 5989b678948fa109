"""A cluster: ranks of one job that run the code a notebook sends them, cell after cell."""

from __future__ import annotations

import atexit
import os
import pickle
import selectors
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NoReturn

from .._job import settings
from .._job.frames import Channel
from .._job.shm_files import cleanup_shm_files
from .._job.spawn import describe_exit, kill_groups
from .._job.store_server import StoreServer
from .._job.workers import start_worker
from ..errors import RMAError

__all__ = [
    "Cluster",
    "RankError",
    "RankResult",
    "OutputCallback",
    "ErrorCallback",
    "WORKER",
    "CONTROL_FD",
    "RAISE_GRACE",
]

#: What each rank runs with ``python -m`` (worker.py).
WORKER = f"{__package__}.worker"
#: The variable that gives a rank its end of the control socket.
CONTROL_FD = "RMA_NOTEBOOK_FD"
# Seconds a rank killed at stop() may take to go.
_KILL_WAIT = 5.0
# Seconds the other ranks get to finish a cell after one raised; then they are interrupted
# (they are most likely waiting for the one that raised).
RAISE_GRACE = 1.0


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
    #: The repr of the cell's last expression, when it is one and not None.
    display: str | None = None
    #: PNG images of the matplotlib figures the cell left open.
    figures: list[bytes] = field(default_factory=list)
    #: Stopped (KeyboardInterrupt) because another rank raised.
    interrupted: bool = False


#: Called as a cell runs: on_output(rank, "stdout" or "stderr", text of whole lines).
OutputCallback = Callable[[int, str, str], None]
#: Called once per rank that raised, as soon as it did.
ErrorCallback = Callable[[RankResult], None]


class Cluster:
    """Start `n` ranks of one job that serve cells until stop(); `env` adds to their environment
    (``{"RMA_MODEL": "separate"}``, ``{"RMA_CHECK": "1"}``)."""

    def __init__(
        self, n: int = 4, *, provider: str | None = None, env: dict[str, str] | None = None, start_timeout: float = 60
    ) -> None:
        if n < 1:
            raise ValueError(f"rma.notebook: a cluster needs at least one rank, not {n}")
        # The ranks' errors go to the kernel's terminal, not to the notebook: a bad setting is
        # told here, before any rank starts (rma._job.settings).
        ranks_env = {**os.environ, **(env or {})}
        if provider:
            ranks_env["RMA_PROVIDER"] = provider
        settings.job_settings(ranks_env)
        self.size = n
        self._store = StoreServer(size=n)
        self._store.start()
        self._channels: list[Channel] = []
        self._processes: list[subprocess.Popen] = []
        self._clock: list[int] | None = None  # RMA_CHECK's, see _everywhere
        for rank in range(n):
            process, channel = start_worker(WORKER, rank, n, self._store, provider, CONTROL_FD, env=env)
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

    def run(
        self, code: str, *, on_output: OutputCallback | None = None, on_error: ErrorCallback | None = None
    ) -> list[RankResult]:
        """Run `code` on every rank (in each rank's namespace); return what each made of it.

        on_output sees each rank's output as it is printed, on_error each rank's exception as
        it is raised. Once a rank raised, the others get RAISE_GRACE seconds to finish the
        cell, then are interrupted (RankResult.interrupted), so that a cell never waits for
        ever on a rank that is gone from a collective.
        """
        return self._everywhere({"op": "run", "code": code}, on_output, on_error)

    def pull(self, expression: str) -> list[Any]:
        """Return the value of `expression` on every rank, in rank order."""
        results = self._everywhere({"op": "pull", "expression": expression})
        _raise_errors(results)
        return [pickle.loads(r.value) for r in results]

    def push(self, **values: Any) -> None:
        """Set variables on every rank."""
        _raise_errors(self._everywhere({"op": "push", "values": pickle.dumps(values)}))

    def _check_alive(self) -> None:
        if self.stopped:
            raise RMAError("rma.notebook: the cluster was stopped; start a new one with rma.notebook.start(n)")
        dead = [(rank, p.poll()) for rank, p in enumerate(self._processes) if p.poll() is not None]
        if dead:
            what = "; ".join(f"rank {rank} ended ({describe_exit(status)})" for rank, status in dead)
            raise RMAError(
                f"rma.notebook: {what}: this cluster cannot run cells any more; "
                "start a new one with rma.notebook.start(n)"
            )

    def _everywhere(
        self, command: dict, on_output: OutputCallback | None = None, on_error: ErrorCallback | None = None
    ) -> list[RankResult]:
        self._check_alive()
        # RMA_CHECK: the ranks' clocks as they ended the last command, merged (this order,
        # every rank's last command before any rank's next, is one rma does not see itself).
        command = {**command, "clock": self._clock}
        for channel in self._channels:
            try:
                channel.send(command)
            except OSError:
                self._check_alive()  # says which rank died
                raise
        results: dict[int, RankResult] = {}
        figures: dict[int, list[bytes]] = {rank: [] for rank in range(self.size)}
        raised_at: float | None = None
        interrupted: set[int] = set()  # by us, because another rank raised
        kernel_interrupted = False
        with selectors.DefaultSelector() as selector:
            for rank, channel in enumerate(self._channels):
                selector.register(channel.sock, selectors.EVENT_READ, rank)
            while len(results) < self.size:
                try:
                    timeout = None
                    if raised_at is not None and not interrupted:
                        timeout = max(0.0, raised_at + RAISE_GRACE - time.monotonic())
                    ready = selector.select(timeout)
                    if not ready and raised_at is not None and not interrupted:
                        # Those still running most likely wait for the rank that raised.
                        interrupted = {rank for rank in range(self.size) if rank not in results}
                        self._interrupt(interrupted)
                    for key, _ in ready:
                        rank = key.data
                        try:
                            frames = self._channels[rank].receive_ready()
                        except OSError:  # ConnectionError too: cut within a frame
                            frames = None
                        if frames is None:
                            self._lost(rank)
                        for frame in frames:
                            if frame["op"] == "output":
                                if on_output is not None:
                                    on_output(rank, frame["stream"], frame["text"])
                            elif frame["op"] == "figure":
                                figures[rank].append(frame["png"])
                            else:
                                result = _result(rank, frame, figures[rank], rank in interrupted)
                                results[rank] = result
                                self._merge_clock(frame.get("clock"))
                                if result.error and not result.interrupted:
                                    raised_at = raised_at or time.monotonic()
                                    if on_error is not None:
                                        on_error(result)
                except KeyboardInterrupt:
                    # The kernel was interrupted: interrupt the cell on every rank, then collect
                    # their (interrupted) results; the ranks stay up. A second time: give up.
                    if kernel_interrupted:
                        raise
                    kernel_interrupted = True
                    self._interrupt(set(range(self.size)) - set(results))
        return [results[rank] for rank in range(self.size)]

    def _merge_clock(self, clock: list[int] | None) -> None:
        if clock is not None:
            self._clock = clock if self._clock is None else [max(a, b) for a, b in zip(self._clock, clock)]

    def _lost(self, rank: int) -> NoReturn:
        """A rank's channel ended in the middle of a call: it died, or is dying."""
        try:
            self._processes[rank].wait(timeout=_KILL_WAIT)
        except subprocess.TimeoutExpired:
            pass
        self._check_alive()
        raise RMAError(f"rma.notebook: rank {rank} stopped answering; start a new cluster with rma.notebook.start(n)")

    def _interrupt(self, ranks: set[int]) -> None:
        for rank in ranks:
            process = self._processes[rank]
            if process.poll() is None:
                os.kill(process.pid, signal.SIGINT)

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


def _result(rank: int, reply: dict, figures: list[bytes], interrupted: bool) -> RankResult:
    return RankResult(
        rank,
        reply["stdout"],
        reply["stderr"],
        reply["error"],
        reply.get("value"),
        reply.get("display"),
        figures,
        interrupted and reply["error"] is not None,
    )


def _raise_errors(results: list[RankResult]) -> None:
    failed = [r for r in results if r.error]
    if failed:
        details = "\n".join(f"---- rank {r.rank} ----\n{r.error}" for r in failed)
        raise RankError(
            f"raised on rank{'s' if len(failed) > 1 else ''} {', '.join(str(r.rank) for r in failed)}:\n{details}"
        )
