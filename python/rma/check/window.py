"""The window calls under RMA_CHECK: each access is recorded, each synchronization carries the clock.

A communication call runs as usual, then records what it touched at its target (an `Access`)
and compares it with this origin's accesses to that target that are not completed yet: a
conflict among them is reported at the call. A completing call (flush, unlock, complete,
fence) stamps the accesses it completes with this rank's next publication of its clock, and
they travel to their target, whose journal compares them with the other origins' accesses:

- fence and free: every rank hands every other rank its accesses in one exchange, with its
  clock; the journals then forget, as a fence orders everything before it before everything
  after it;
- post/start/complete/wait: post sends the target's clock to the origins of its group (start
  takes it before the first access to that target), complete sends the origin's clock and
  accesses to each target, and wait (or a test that succeeds) takes them in;
- lock/unlock: the clock goes through a second, private window (the "lock clocks"): unlock
  leaves this rank's clock at the target, and lock takes what earlier holders left there
  (an exclusive lock: every holder's; a shared one: the exclusive holders' only, since shared
  locks do not order each other); the accesses go to the target in messages that it reads
  at its own next synchronization call, and at the latest at free.
"""

from __future__ import annotations

import operator
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from functools import partial
from typing import Any

import numpy as np

from .. import check
from .._python_epoch import PythonEpoch
from ..comm import ANY_SOURCE, Comm, Status
from ..group import Group
from ..ops import LOCK_EXCLUSIVE, MAX, NO_OP, PROC_NULL, SUM
from ..window import Window, _keep_local, adopt_docs
from .access import ATOMIC_READ, NOT_DONE, READ, UPDATE, WRITE, Access, conflict, overlap, strided_spans
from .clock import clock
from .journal import Journal, message
from .local import WatchedArray, spans_of
from .origins import OriginWatch
from .results import ResultWatch

__all__ = ["CheckedWindow"]

# Tags of the checker's own messages, on a communicator of its own.
_POST, _COMPLETE, _ACCESSES = 1, 2, 3
# Accesses an origin keeps for a target before it sends them without waiting for an unlock.
_BATCH = 64
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_NUMPY = os.path.dirname(np.__file__)


_SITES: dict[tuple[str, int], str] = {}


def _site() -> str:
    """Return the user's file and line of the call being recorded (the first frame outside rma)."""
    frame = sys._getframe(2)
    while frame is not None and frame.f_code.co_filename.startswith((_PACKAGE, _NUMPY)):
        frame = frame.f_back
    if frame is None:
        return "?"
    where = (frame.f_code.co_filename, frame.f_lineno)
    site = _SITES.get(where)
    if site is None:
        site = _SITES[where] = f"{os.path.basename(where[0])}:{where[1]}"
    return site


def _ranks(group: Group | list) -> list[int]:
    """Return a group's ranks, once the call has accepted it."""
    return list(group.ranks) if isinstance(group, Group) else [operator.index(rank) for rank in group]


class _WatchedRequest:
    """A request-based call whose origin or result array is watched: its wait or test completes
    it here."""

    __slots__ = ("_request", "_window", "_target", "_origin", "_result")

    def __init__(self, request: Any, window: CheckedWindow, target: int, origin: Any, result: Any) -> None:
        self._request, self._window, self._target = request, window, target
        self._origin, self._result = origin, result

    def wait(self) -> Any:
        result = self._request.wait()
        self._done()
        return result if self._result is None else self._result[0]  # (the caller's array, not the private one)

    def test(self) -> bool:
        done = self._request.test()
        if done:
            self._done()
        return done

    def _done(self) -> None:
        window = self._window
        if self._origin is not None:
            window._keep(window._ck_origins.request_completed(self._target, self._origin))
        if self._result is not None:
            window._keep(window._ck_results.request_completed(self._target, self._result))
        window._report()


class _PeerWatch:
    """The watcher of win.shared(rank) for another rank's memory: its loads and stores are
    accesses of this rank to that one."""

    __slots__ = ("_window", "_target", "_base")

    def __init__(self, window: CheckedWindow, target: int, base: int) -> None:
        self._window, self._target, self._base = window, target, base

    def _local_access(self, kind: str, array: np.ndarray) -> None:
        self._window._direct_access(self._target, self._base, kind, array)


class _Companion(Window):
    """The private window of lock clocks (a subclass, so that it is not checked itself)."""


class CheckedWindow(Window):
    def _start_checking(self) -> None:
        comm = self._comm
        members = comm._core.members
        self._ck_world = list(members)  # window rank -> world rank (the clock's index)
        self._ck_name = self._core.label
        self._ck_private = Comm(comm._core.split(0, comm.rank, "Window (RMA_CHECK)"))
        self._ck_inflight: dict[int, dict[Access, None]] = {}  # by target, in call order
        self._ck_outgoing: dict[int, dict[tuple[Access, int], Access]] = {}  # completed, not sent yet
        self._ck_origins = OriginWatch()
        self._ck_results = ResultWatch()
        self._ck_base = self._local.__array_interface__["data"][0]
        self._ck_stamp: tuple[int, ...] | None = None  # the clock _ck_made's accesses were made at
        self._ck_made: dict[tuple, Access] = {}
        self._ck_sent = [0] * comm.size
        self._ck_received = [0] * comm.size
        self._ck_journal = Journal(self._ck_name)
        self._ck_posts: set[int] = set()  # start's targets whose post clock has not come yet
        self._ck_access_group: list[int] = []
        self._ck_exposure_group: list[int] | None = None
        self._ck_locks: dict[int, bool] = {}  # target -> exclusive
        self._ck_lock_all = False
        self._ck_found: str | None = None  # the first conflict found, until a call reports it
        self._ck_reported = False
        self._ck_epochs = 0
        self._ck_epoch = "epoch 0"  # before the first fence
        self._ck_listen = self._ck_private.irecv(ANY_SOURCE, _ACCESSES)
        size = len(clock().now())
        self._ck_clocks: Window | None = None
        if not self._info.get("no_locks"):
            self._ck_clocks = _Companion.allocate(self._ck_private, 2 * size, np.int64)
            self._ck_clocks.lock_all()

    # ---- the owner's loads and stores ----

    @property
    def local(self) -> np.ndarray:
        """Return this rank's window memory as a NumPy array (zero-copy; RMA_CHECK watches it)."""
        self._check_open("local")
        watched = self._local.view(WatchedArray)
        watched._watcher = self
        return watched

    @local.setter
    def local(self, value: np.ndarray) -> None:
        _keep_local(value, self._local)

    def shared(self, rank):
        view = super().shared(rank)  # (checks the rank and the window's flavor)
        target = operator.index(rank)
        watched = view.view(WatchedArray)
        if target == self._comm.rank:
            watched._watcher = self
        else:
            watched._watcher = _PeerWatch(self, target, view.__array_interface__["data"][0])
        return watched

    def _local_access(self, kind: str, array: np.ndarray) -> None:
        """Record a load or store of win.local: an access of this rank to itself, complete at once."""
        self._direct_access(self._comm.rank, self._ck_base, kind, array)

    def _direct_access(self, target: int, base: int, kind: str, array: np.ndarray) -> None:
        """Record a load or store of `target`'s memory (win.local, or win.shared(target) of a
        shared window, mapped at `base`): an access of this rank, complete at once, which goes
        to the target's journal (this rank's own at once; another's with the completed calls)."""
        spans = spans_of(array, base)
        if not spans:
            return
        site = _site()
        now = clock()
        stamp = now.now()
        if stamp is not self._ck_stamp:
            self._ck_stamp, self._ck_made = stamp, {}
        me = self._comm.rank
        key = (target, kind, spans, site, self._ck_epoch)
        access = self._ck_made.get(key)
        known = access is not None
        if not known:
            store = kind == "store"
            memory = "win.local" if target == me else f"win.shared({target})"
            access = self._ck_made[key] = Access(
                self._ck_world[me],
                me,
                target,
                f"store to {memory}" if store else f"load of {memory}",
                WRITE if store else READ,
                "",
                "",
                spans,
                stamp,
                now.tick,
                now.tick,
                now.next_publication(),
                site,
                self._ck_epoch,
            )
        now.tick += 1
        for earlier in self._ck_inflight.get(target, ()):  # this rank's calls to the target, not completed
            if overlap(earlier.spans, spans) is not None:
                why = conflict(earlier, access)
                if why is not None:
                    self._keep(message(self._ck_name, earlier, access, why))
        if known:
            return
        if target == me:
            self._learn([access])
        else:  # travels with this rank's completed calls to the target
            self._ck_outgoing.setdefault(target, {})[access, access.done] = access

    # ---- communication: the call, then its record ----

    def put(self, origin, target_rank, target_disp=0, *, target=None):
        super().put(origin, target_rank, target_disp, target=target)
        self._record("win.put", WRITE, None, origin, target_rank, target_disp, target, origin)

    # The calls with a result array fill a private one, which their completion copies into it
    # (results.py); `data` stays the caller's array, whose size and dtype are the call's.

    def get(self, result, target_rank, target_disp=0, *, target=None):
        staged = ResultWatch.stage(result)
        super().get(staged, target_rank, target_disp, target=target)
        self._record("win.get", READ, None, result, target_rank, target_disp, target, staged=staged)

    def accumulate(self, origin, target_rank, target_disp=0, op=SUM, *, target=None):
        super().accumulate(origin, target_rank, target_disp, op, target=target)
        self._record("win.accumulate", UPDATE, op, origin, target_rank, target_disp, target, origin)

    def get_accumulate(self, origin, result, target_rank, target_disp=0, op=SUM, *, target=None):
        staged = ResultWatch.stage(result)
        super().get_accumulate(origin, staged, target_rank, target_disp, op, target=target)
        kind = ATOMIC_READ if op == NO_OP else UPDATE
        self._record("win.get_accumulate", kind, op, result, target_rank, target_disp, target, origin, staged=staged)

    def fetch_and_op(self, origin, result, target_rank, target_disp=0, op=SUM):
        staged = ResultWatch.stage(result)
        super().fetch_and_op(origin, staged, target_rank, target_disp, op)
        kind = ATOMIC_READ if op == NO_OP else UPDATE
        self._record("win.fetch_and_op", kind, op, result, target_rank, target_disp, None, origin, staged=staged)

    def compare_and_swap(self, origin, compare, result, target_rank, target_disp=0):
        staged = ResultWatch.stage(result)
        super().compare_and_swap(origin, compare, staged, target_rank, target_disp)
        self._record(
            "win.compare_and_swap", UPDATE, "CAS", result, target_rank, target_disp, None, origin, staged=staged
        )

    def rput(self, origin, target_rank, target_disp=0, *, target=None):
        request = super().rput(origin, target_rank, target_disp, target=target)
        return self._record("win.rput", WRITE, None, origin, target_rank, target_disp, target, origin, request)

    def rget(self, result, target_rank, target_disp=0, *, target=None):
        staged = ResultWatch.stage(result)
        request = super().rget(staged, target_rank, target_disp, target=target)
        return self._record("win.rget", READ, None, result, target_rank, target_disp, target, None, request, staged)

    def raccumulate(self, origin, target_rank, target_disp=0, op=SUM, *, target=None):
        request = super().raccumulate(origin, target_rank, target_disp, op, target=target)
        return self._record("win.raccumulate", UPDATE, op, origin, target_rank, target_disp, target, origin, request)

    def rget_accumulate(self, origin, result, target_rank, target_disp=0, op=SUM, *, target=None):
        staged = ResultWatch.stage(result)
        request = super().rget_accumulate(origin, staged, target_rank, target_disp, op, target=target)
        kind = ATOMIC_READ if op == NO_OP else UPDATE
        call = "win.rget_accumulate"
        return self._record(call, kind, op, result, target_rank, target_disp, target, origin, request, staged)

    # ---- synchronization ----
    # A conflict found while a call is made is reported at its end, once the call's own work is
    # done, and never by an opening call (post, start, lock, lock_all), which would leave its
    # epoch open behind the exception: the closing call, or any later one, reports it.

    def fence(self, mode=0):
        super().fence(mode)
        self._exchange_all()
        self._report()
        return PythonEpoch(self, self._close_fence)

    def _close_fence(self) -> None:
        from ..ops import Mode

        self.fence(Mode.NOSUCCEED)

    def post(self, group, mode=0):
        members = group if isinstance(group, Group) else list(group)  # an iterator is read once
        super().post(members, mode)
        ranks = _ranks(members)
        self._drain()
        now = clock().publish()
        for origin in ranks:
            self._ck_private.send(now, origin, _POST)
        self._ck_exposure_group = ranks
        self._new_epoch("exposure (post)")
        return PythonEpoch(self, self.wait)

    def start(self, group, mode=0):
        members = group if isinstance(group, Group) else list(group)  # an iterator is read once
        super().start(members, mode)
        ranks = _ranks(members)
        self._drain()
        self._ck_posts = set(ranks)
        self._ck_access_group = ranks
        self._new_epoch("start")
        return PythonEpoch(self, self.complete)

    def complete(self):
        super().complete()
        for target in list(self._ck_posts):
            self._take_post(target)
        group = self._ck_access_group
        self._complete_accesses(group)
        now = clock().publish()
        for target in group:
            self._ck_private.send((now, list(self._ck_outgoing.pop(target, {}).values())), target, _COMPLETE)
        self._ck_access_group = []
        self._drain()
        self._report()

    def wait(self):
        super().wait()
        self._take_completes()

    def test(self):
        done = super().test()
        if done:
            self._take_completes()
        return done

    def lock(self, rank, lock_type=LOCK_EXCLUSIVE, mode=0):
        super().lock(rank, lock_type, mode)
        exclusive = lock_type == LOCK_EXCLUSIVE
        with self._given_back_if_interrupted(partial(super().unlock, rank)):
            self._drain()
            if rank != PROC_NULL:
                # An exclusive lock comes after every earlier holder; a shared one after the exclusive ones.
                self._take_lock_clocks([rank], every_holder=exclusive)
        self._ck_locks[rank] = exclusive
        self._new_epoch(f"{'exclusive' if exclusive else 'shared'} lock", f" on rank {rank}")
        return PythonEpoch(self, lambda: self.unlock(rank))

    @contextmanager
    def _given_back_if_interrupted(self, release: Callable[[], None]) -> Iterator[None]:
        """The checker's work after a lock was granted: if it raises (a KeyboardInterrupt, as a
        Ctrl-C does), give the lock back before the exception leaves lock(), as the plain lock
        does, so that no lock stays held by a call that failed."""
        try:
            yield
        except BaseException:
            release()
            raise

    def unlock(self, rank):
        exclusive = self._ck_locks.pop(rank, None)
        if exclusive is not None and rank != PROC_NULL:
            self._release([rank], exclusive)
        super().unlock(rank)
        self._completed_here([rank])
        self._drain()
        self._report()

    def lock_all(self, mode=0):
        super().lock_all(mode)
        with self._given_back_if_interrupted(super().unlock_all):
            self._drain()
            self._take_lock_clocks(range(self._comm.size), every_holder=False)
        self._ck_lock_all = True
        self._new_epoch("lock_all")
        return PythonEpoch(self, self.unlock_all)

    def unlock_all(self):
        if self._ck_lock_all:
            self._ck_lock_all = False
            self._release(range(self._comm.size), exclusive=False)
        super().unlock_all()
        self._completed_here(range(self._comm.size))
        self._drain()
        self._report()

    def flush(self, rank):
        super().flush(rank)
        self._completed([rank])

    def flush_all(self):
        super().flush_all()
        self._completed(range(self._comm.size))

    def flush_local(self, rank):
        super().flush_local(rank)  # completes at the origin only: orders nothing at the target
        self._completed_here([rank])
        self._drain()
        self._report()

    def flush_local_all(self):
        super().flush_local_all()
        self._completed_here(range(self._comm.size))
        self._drain()
        self._report()

    def sync(self):
        super().sync()
        self._drain()
        self._report()

    def free(self):
        if self._core.freed:
            return super().free()
        self._exchange_all()
        super().free()  # may refuse (an epoch still open): the lock clocks stay for the next try
        if self._ck_clocks is not None:
            self._ck_clocks.unlock_all()
            self._ck_clocks.free()
        self._report()

    # ---- the record of an access ----

    def _record(self, call, kind, op, data, target_rank, target_disp, target, origin=None, request=None, staged=None):
        """Record the access a call made (`data`: the array or value whose size it moves), watch
        its origin array and its result array (`data`, filled through `staged`), and return its
        request (wrapped, when it has an array to watch)."""
        rank = operator.index(target_rank)
        if rank == PROC_NULL:  # (nothing comes: the result array stays as it was)
            return request
        if rank in self._ck_posts:
            self._take_post(rank)
        shape, dtype, unit = self._layout[rank]
        if isinstance(data, (np.ndarray, np.generic)):  # a NumPy scalar keeps its dtype too
            count, itemsize, element = data.size, data.dtype.itemsize, data.dtype
        else:
            count = len(data) if isinstance(data, (list, tuple)) else 1
            itemsize, element = dtype.itemsize, dtype
        if call in ("win.fetch_and_op", "win.compare_and_swap"):
            count = 1
        if count == 0:
            return request
        if target is None:
            start = operator.index(target_disp) * unit
            spans: tuple[tuple[int, int], ...] = ((start, start + count * itemsize),)
        else:
            spans = strided_spans(*self._region(call[4:], rank, target, count))
        site = _site()
        now = clock()
        stamp = now.now()
        if stamp is not self._ck_stamp:  # the clock moved: accesses made before are of another time
            self._ck_stamp, self._ck_made = stamp, {}
        key = (rank, call, kind, op, element, spans, site, self._ck_epoch)
        access = self._ck_made.get(key)
        if access is None:
            # One Access per shape and clock: a loop that repeats a call between two moves of the
            # clock makes one record, which stands for every repetition (each would be ordered
            # and conflict exactly as the first; the same origin's own order is checked here).
            access = self._ck_made[key] = Access(
                self._ck_world[self._comm.rank],
                self._comm.rank,
                rank,
                call,
                kind,
                "" if op is None else op if isinstance(op, str) else op.name,
                "" if op is None else str(element if dtype == np.uint8 else dtype),
                spans,
                stamp,
                now.tick,
                NOT_DONE,
                NOT_DONE,
                site,
                self._ck_epoch,
            )
        now.tick += 1
        watched = self._ck_origins.watch(rank, origin, access)
        filled = None if staged is None else self._ck_results.watch(rank, data, staged, access)
        pending = self._ck_inflight.get(rank)
        if pending is None:
            pending = self._ck_inflight[rank] = {}
        if access in pending:  # made again before completing: only with itself can it conflict
            self._check_pair(access, access)
        else:
            for earlier in pending:
                if overlap(earlier.spans, spans) is not None and self._check_pair(earlier, access):
                    break
            pending[access] = None
        if request is None or (watched is None and filled is None):
            return request
        return _WatchedRequest(request, self, rank, watched, filled)

    def _check_pair(self, earlier: Access, access: Access) -> bool:
        """Report two accesses of this origin to one target, both not completed, if they conflict."""
        why = conflict(earlier, access)
        if why is None:
            return False
        self._keep(message(self._ck_name, earlier, access, why))
        self._report()  # at the call itself
        return True

    def _new_epoch(self, kind: str, where: str = "") -> None:
        """Name the epoch this rank's next accesses belong to ("fence epoch 3", "lock_all epoch 2")."""
        self._ck_epochs += 1
        self._ck_epoch = f"{kind} epoch {self._ck_epochs}{where}"

    # ---- completion and delivery ----

    def _complete_accesses(self, targets: Iterable[int], here: bool = True) -> None:
        """Stamp the accesses to `targets` as completed there by the call being made (and at this
        rank, unless `here` is False: before an unlock, which completes them here only as it
        returns)."""
        targets = list(targets)
        if here:
            self._completed_here(targets)
        now = clock()
        done, tick = now.next_publication(), now.tick
        for target in targets:
            pending = self._ck_inflight.pop(target, None)
            if pending:
                out = self._ck_outgoing.get(target)
                if out is None:
                    out = self._ck_outgoing[target] = {}
                for access in pending:
                    if (access, done) not in out:  # a repetition completed by the same publication
                        out[access, done] = access._replace(done_tick=tick, done=done)
        now.tick += 1

    def _completed_here(self, targets: Iterable[int]) -> None:
        """The calls to `targets` completed at this rank: their origin arrays are free again, and
        their result arrays get what the calls brought (so only once the plain call that
        completes them has returned)."""
        targets = list(targets)
        self._keep(self._ck_origins.completed(targets))
        self._keep(self._ck_results.completed(targets))

    def _completed(self, targets: Iterable[int]) -> None:
        """After a flush: send the completed accesses of a target once enough wait."""
        targets = list(targets)
        self._complete_accesses(targets)
        for target in targets:
            if len(self._ck_outgoing.get(target, ())) >= _BATCH:
                self._send(target)
        self._drain()
        self._report()

    def _send(self, target: int) -> None:
        outgoing = self._ck_outgoing.pop(target, None)
        if not outgoing:
            return
        accesses = list(outgoing.values())
        if target == self._comm.rank:
            self._learn(accesses)
        else:
            self._ck_private.send(accesses, target, _ACCESSES)
            self._ck_sent[target] += 1

    def _release(self, targets: Iterable[int], exclusive: bool) -> None:
        """Before an unlock: complete the accesses, leave this rank's clock at the targets, send."""
        targets = list(targets)
        self._complete_accesses(targets, here=False)
        now = np.asarray(clock().publish(), dtype=np.int64)
        size = now.size
        for target in targets:
            self._ck_clocks.accumulate(now, target, 0, MAX)
            if exclusive:
                self._ck_clocks.accumulate(now, target, size, MAX)
        self._ck_clocks.flush_all()
        for target in targets:
            self._send(target)

    def _take_lock_clocks(self, targets: Iterable[int], every_holder: bool) -> None:
        size = len(clock().now())
        buffers = []
        for target in targets:
            buffer = np.empty(size, np.int64)
            self._ck_clocks.get(buffer, target, 0 if every_holder else size)
            buffers.append(buffer)
        self._ck_clocks.flush_all()
        clock().merge_all(buffer.tolist() for buffer in buffers)

    def _take_post(self, target: int) -> None:
        clock().merge(self._ck_private.recv(target, _POST))
        self._ck_posts.discard(target)

    def _take_completes(self) -> None:
        group, self._ck_exposure_group = self._ck_exposure_group or [], None
        for origin in group:
            now, accesses = self._ck_private.recv(origin, _COMPLETE)
            clock().merge(now)
            self._learn(accesses)
        self._drain()
        self._report()

    def _learn(self, accesses: list[Access]) -> None:
        """Check accesses to this rank; keep the first conflict for _report."""
        self._keep(self._ck_journal.add(accesses))

    def _keep(self, found: str | None) -> None:
        """Keep the first conflict found until a call reports it."""
        if found and self._ck_found is None:
            self._ck_found = found

    def _report(self) -> None:
        """Raise (or warn of) the conflict found, once the call's own work is done. A window
        reports its first conflict only: the later ones are mostly that one's echoes."""
        found, self._ck_found = self._ck_found, None
        if found and not self._ck_reported:
            self._ck_reported = True
            check.report(found)

    def _drain(self) -> None:
        """Take in the accesses other origins sent without a collective call."""
        while self._ck_listen.test():
            self._take_batch()

    def _take_batch(self) -> None:
        """Take in the next batch of accesses sent without a collective call (waiting for it),
        count it by sender, and listen for the one after."""
        status = Status()
        accesses = self._ck_listen.wait(status)
        self._ck_received[status.source] += 1
        self._ck_listen = self._ck_private.irecv(ANY_SOURCE, _ACCESSES)
        self._learn(accesses)

    def _exchange_all(self) -> None:
        """At a fence or free: every rank's accesses to every other, then forget them all."""
        size = self._comm.size
        self._complete_accesses(range(size))
        now = clock().publish()
        outgoing = [list(self._ck_outgoing.pop(r, {}).values()) for r in range(size)]
        items = self._ck_private.alltoall([(now, outgoing[r], self._ck_sent[r]) for r in range(size)])
        for origin, (other, accesses, sent) in enumerate(items):
            clock().merge(other)
            self._learn(accesses)
            while self._ck_received[origin] < sent:  # what it sent without a collective call
                self._take_batch()
        self._ck_journal.clear()
        self._new_epoch("fence")


adopt_docs(CheckedWindow)  # its calls say what the plain ones say (help(), IPython's ?)
