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

An idle worker looks for started collectives every 20 ms, asleep in between (a collective no
thread waits for starts within that), and ends after a second without any (the next I-call
starts another); it is a daemon thread, and `_stop_all` ends it at exit. A thread that waits
for a collective not yet begun, next in line, runs it itself meanwhile: an I-call followed by
its Wait costs about what the blocking call does.
"""

from __future__ import annotations

import atexit
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from .constants import ANY_SOURCE, ANY_TAG
from .errors import TRANSLATED, as_mpi

__all__: list[str] = []

_IDLE_SECONDS = 1.0  # an idle worker ends after this long without work
_PICKUP_SECONDS = 0.001  # how long a just-started collective is left to a Wait before the worker takes it
_IDLE_LOOK_SECONDS = 0.02  # how often an idle worker looks for started collectives (it sleeps between)
_POLL_SECONDS = 0.5  # how often a waiter looks whether the worker still lives

_lock = threading.Lock()
_queues: dict[int, CollectiveQueue] = {}  # id(rma.Comm) -> its queue, while it has a worker
_stopping_registered = False


class Started:
    """One started collective: what MPI.Request wraps (wait() and test() -> bool)."""

    __slots__ = ("_done", "_finished", "_error", "_call", "_queue", "_run", "status")

    def __init__(self, call: str, queue: CollectiveQueue, run: Callable[[], None]) -> None:
        # Held until the collective has run: a waiter sleeps acquiring it (lighter than an Event).
        self._done = threading.Lock()
        self._done.acquire()
        self._finished = False
        self._error: BaseException | None = None
        self._call, self._queue, self._run = call, queue, run
        self.status = (ANY_SOURCE, ANY_TAG, 0, False)  # (what MPI.Request fills a status from: MPI's empty one)

    def _execute(self) -> None:
        """Run the collective (in the worker, or in a waiter that took it) and record how it ended."""
        error: BaseException | None = None
        try:
            self._run()
        except BaseException as exc:  # (kept for the request's Wait, whatever it is)
            error = exc
        self._error, self._run, self._finished = error, None, True
        self._done.release()

    def wait(self) -> None:
        """Wait until the collective has run; raise its error (as MPI.Exception). If it is next in
        line and the worker is not running one, the waiting thread runs it itself: the same
        order, without waking the worker and being woken by it (an I-call then Wait costs a
        blocking call's time)."""
        if not self._finished:
            if self._queue._take(self):
                self._queue._ran(self)
            while not self._done.acquire(timeout=_POLL_SECONDS):
                pass  # (the worker's calls have rma's deadlines, so this ends; it sleeps meanwhile)
            self._done.release()  # (for other waiters)
        self._raise()

    def test(self) -> bool:
        """Whether the collective is complete (raising its error if it failed)."""
        if not self._finished:
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
        self._jobs: deque[Started] = deque()
        self._pending = 0  # queued or running
        self._running = False  # one of them is running (in the worker or in a waiter)
        self._stopping = False
        self._last_submit = 0.0
        self._changed = threading.Condition(_lock)  # drain's: notified when nothing is pending
        self._wake = threading.Condition(_lock)  # the worker's: notified only to stop it
        self._thread: threading.Thread | None = None

    def _submit(self, run: Callable[[], None], call: str) -> Started:
        """Queue `run` (the collective's communication) and return its handle; _lock held."""
        started = Started(call, self, run)
        self._pending += 1
        self._jobs.append(started)
        self._last_submit = time.monotonic()
        if self._thread is None:
            self._thread = threading.Thread(target=self._work, name=f"rma.compat {call} worker", daemon=True)
            self._thread.start()
        return started

    def _take(self, started: Started) -> bool:
        """Whether `started` was next and nothing ran: then it is the caller's to run now."""
        with _lock:
            if self._running or not self._jobs or self._jobs[0] is not started:
                return False
            self._jobs.popleft()
            self._running = True
            return True

    def _ran(self, started: Started) -> None:
        started._execute()
        with _lock:
            self._running = False
            self._pending -= 1
            if not self._pending:
                self._changed.notify_all()

    def drain(self) -> None:
        """Sleep until every started collective has run (a blocking collective comes after them)."""
        with _lock:
            while self._pending:
                self._changed.wait(_POLL_SECONDS)

    def _work(self) -> None:
        while True:
            with _lock:
                while True:
                    if self._stopping:
                        self._thread = None
                        return
                    now = time.monotonic()
                    if self._running:
                        self._wake.wait(_IDLE_LOOK_SECONDS)  # (a waiter runs one)
                    elif self._jobs and now - self._last_submit < _PICKUP_SECONDS:
                        # Just started: a Wait that follows its I-call may take it itself, without
                        # two threads taking turns; the worker takes it after this moment.
                        self._wake.wait(_PICKUP_SECONDS - (now - self._last_submit))
                    elif self._jobs:
                        break
                    elif now - self._last_submit >= _IDLE_SECONDS:
                        # Nothing started for a while: end (the next I-call starts another).
                        self._thread = None
                        if _queues.get(id(self._owner)) is self:
                            del _queues[id(self._owner)]
                        return
                    else:
                        # Not woken by _submit or _ran (waking it at each I-call or Wait made the
                        # program's thread hand the GIL over and back: an 8-byte Iallreduce +
                        # Wait took 60 us instead of 40): it looks every _IDLE_LOOK_SECONDS.
                        self._wake.wait(min(_IDLE_LOOK_SECONDS, _IDLE_SECONDS - (now - self._last_submit)))
                started = self._jobs.popleft()
                self._running = True
            self._ran(started)

    def _stop(self) -> None:
        with _lock:
            thread, self._stopping = self._thread, True
            self._wake.notify_all()
        if thread is not None:
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


def finish() -> None:
    """Before MPI.Finalize: let every started collective run (a program must have completed its
    requests: an erroneous one's collective then ends at rma's deadline, not under a finalized
    runtime), then end the workers."""
    for known in list(_queues.values()):
        known.drain()
    _stop_all()


def _stop_all() -> None:
    """At exit, end the workers (they are idle unless a request was never waited for)."""
    for known in list(_queues.values()):
        known._stop()
