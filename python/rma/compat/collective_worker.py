"""Where the facade's nonblocking collectives run: one worker thread per communicator, which
runs that communicator's started collectives one after another, in the order the program
started them.

Why a thread: MPI lets a program start Ibarrier or Iallreduce, then send and receive
point-to-point messages, and only then wait; doing the collective inside the I-call would
deadlock such a program (its peers reach the collective only after those messages). rma's
core calls release the GIL and are thread-safe, so the worker's collective progresses while
the program's thread sends and receives.

Why one ordered queue: every rank must see a communicator's collectives in the same order.
The worker keeps the started ones in order, and a blocking collective of the communicator
first waits until its queue is empty (`drain`), so it comes after them on every rank.

An idle worker sleeps in its queue's get and ends after a second without work (it is started
again by the next I-call); it is a daemon thread, and `_stop_all` ends the idle ones at exit.
"""

from __future__ import annotations

import atexit
import queue
import threading
from collections.abc import Callable
from typing import Any

from .constants import ANY_SOURCE, ANY_TAG
from .errors import TRANSLATED, as_mpi

__all__: list[str] = []

_IDLE_SECONDS = 1.0  # an idle worker ends after this long without work
_POLL_SECONDS = 0.5  # how often a waiter looks whether the worker still lives

_lock = threading.Lock()
_queues: dict[int, CollectiveQueue] = {}  # id(rma.Comm) -> its queue, while it has a worker
_stopping_registered = False


class Started:
    """One started collective: what MPI.Request wraps (wait() and test() -> bool)."""

    __slots__ = ("_done", "_error", "_call", "status")

    def __init__(self, call: str) -> None:
        self._done = threading.Event()
        self._error: BaseException | None = None
        self._call = call
        self.status = (ANY_SOURCE, ANY_TAG, 0, False)  # (what MPI.Request fills a status from: MPI's empty one)

    def _finish(self, error: BaseException | None) -> None:
        self._error = error
        self._done.set()

    def wait(self) -> None:
        """Sleep until the worker has run the collective; raise its error (as MPI.Exception)."""
        while not self._done.wait(_POLL_SECONDS):
            pass  # (the worker's calls have rma's deadlines, so this ends; it sleeps meanwhile)
        self._raise()

    def test(self) -> bool:
        """Whether the collective is complete (raising its error if it failed)."""
        if not self._done.is_set():
            return False
        self._raise()
        return True

    def _raise(self) -> None:
        error = self._error
        if error is not None:
            raise (as_mpi(error) if isinstance(error, TRANSLATED) else error) from None


class CollectiveQueue:
    """The started collectives of one communicator and the thread that runs them."""

    def __init__(self, owner: Any) -> None:
        self._owner = owner  # the rma.Comm (kept alive while collectives of it are queued)
        self._jobs: queue.SimpleQueue[tuple[Callable[[], None], Started] | None] = queue.SimpleQueue()
        self._pending = 0
        self._idle = threading.Condition(_lock)
        self._thread: threading.Thread | None = None

    def _submit(self, run: Callable[[], None], call: str) -> Started:
        """Queue `run` (the collective's communication) and return its handle; _lock held."""
        started = Started(call)
        self._pending += 1
        self._jobs.put((run, started))
        if self._thread is None:
            self._thread = threading.Thread(target=self._work, name=f"rma.compat {call} worker", daemon=True)
            self._thread.start()
        return started

    def drain(self) -> None:
        """Sleep until every started collective has run (a blocking collective comes after them)."""
        with _lock:
            while self._pending:
                self._idle.wait(_POLL_SECONDS)

    def _work(self) -> None:
        while True:
            try:
                job = self._jobs.get(timeout=_IDLE_SECONDS)
            except queue.Empty:
                with _lock:
                    if self._pending == 0:  # nothing queued since: end (submit starts another)
                        self._thread = None
                        if _queues.get(id(self._owner)) is self:
                            del _queues[id(self._owner)]
                        return
                continue
            if job is None:
                return
            run, started = job
            error: BaseException | None = None
            try:
                run()
            except BaseException as exc:  # (kept for the request's Wait, whatever it is)
                error = exc
            started._finish(error)
            with _lock:
                self._pending -= 1
                self._idle.notify_all()

    def _stop(self) -> None:
        thread = self._thread
        if thread is not None:
            self._jobs.put(None)
            thread.join(timeout=_IDLE_SECONDS)


def start(owner: Any, run: Callable[[], None], call: str) -> Started:
    """Start collective `run` of communicator `owner` (an rma.Comm) in its worker."""
    global _stopping_registered
    with _lock:
        known = _queues.get(id(owner))
        if known is None or known._owner is not owner:
            known = _queues[id(owner)] = CollectiveQueue(owner)
        if not _stopping_registered:
            # Registered after rma joined the job, so it runs before rma's own exit handler.
            atexit.register(_stop_all)
            _stopping_registered = True
        return known._submit(run, call)


def drain(owner: Any) -> None:
    """Wait until `owner`'s started collectives have run (called before its blocking ones)."""
    known = _queues.get(id(owner))
    if known is not None and known._owner is owner:
        known.drain()


def _stop_all() -> None:
    """At exit, end the workers (they are idle unless a request was never waited for)."""
    for known in list(_queues.values()):
        known._stop()
