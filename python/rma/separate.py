"""RMA_MODEL=separate: MPI's separate memory model (spec/004), emulated on a unified machine.

Every machine rma runs on is unified: a put lands in the memory `win.local` shows. A program
that counts on that (it reads what a peer put without a synchronization that makes the two
copies meet) is wrong on a separate-model system, and nothing here would show it. With
``RMA_MODEL=separate`` in the environment of the job, `win.local` is a private copy of the
window's memory, remote calls (and this rank's own) reach the public copy, and the two meet
only where spec/004 lets them:

- the owner's stores reach the public copy at `win.sync()`, at a fence, a post (its exposure
  epoch begins), an unlock of its own rank or an unlock_all, and at free;
- what remote calls wrote reaches `win.local` at `win.sync()`, at a fence, at the wait (or a
  test that succeeds) that ends an exposure epoch, and at a lock of its own rank or a lock_all.

A meeting copies the bytes the owner stored since the last one into the public copy, and the
bytes remote calls wrote since then into the private copy (a byte both changed is a conflict
that RMA_CHECK's rules forbid; the remote value wins). Dynamic windows stay unified (their memory is the
attached arrays themselves). For `Window.create`, the array passed in is the public copy, and
`win.local` the private one.

`Separate` is a mixin: rma/_window_kinds.py composes it onto rma.Window (as `SeparateWindow`,
and `CheckedSeparateWindow` under RMA_CHECK too) for the windows of such a job.
"""

from __future__ import annotations

import numpy as np

from ._job import settings
from ._python_epoch import PythonEpoch
from .ops import LOCK_EXCLUSIVE, Mode

__all__ = ["MODEL", "Separate"]


# Read once, at import: every rank of a job has the same environment.
MODEL = settings.memory_model()  # (rma._job.settings judges RMA_MODEL)


class Separate:
    """A window whose `local` is a private copy that meets the public one at synchronizations."""

    def _start_separate(self) -> None:
        self._private = self._local.copy()
        self._agreed = self._local.copy()  # what both copies held when they last met

    @property
    def local(self) -> np.ndarray:
        """Return this rank's private copy of its window memory (RMA_MODEL=separate)."""
        self._check_open("local")
        return self._private

    @local.setter
    def local(self, value: np.ndarray) -> None:
        self._keep_local(value, self._private)

    @property
    def model(self) -> str:
        """Return "separate": win.local is a private copy (RMA_MODEL=separate)."""
        return "separate"

    # ---- where the copies meet ----

    def _bytes(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return tuple(array.reshape(-1).view(np.uint8) for array in (self._local, self._private, self._agreed))

    def _push(self) -> None:
        """The owner's stores since the copies last met go to the public copy."""
        public, private, agreed = self._bytes()
        stored = private != agreed
        if stored.any():
            public[stored] = private[stored]
            agreed[stored] = private[stored]

    def _pull(self) -> None:
        """What remote calls wrote to the public copy since the copies last met goes to the
        private one (the owner's stores not pushed yet stay where they are)."""
        public, private, agreed = self._bytes()
        written = public != agreed
        if written.any():
            private[written] = public[written]
            agreed[written] = public[written]

    def sync(self):
        self._push()
        super().sync()
        self._pull()

    def fence(self, mode=0):
        self._push()
        super().fence(mode)
        self._pull()
        return PythonEpoch(self, self._close_fence)

    def _close_fence(self) -> None:
        self.fence(Mode.NOSUCCEED)

    def post(self, group, mode=0):
        self._push()
        super().post(group, mode)
        return PythonEpoch(self, self.wait)

    def wait(self):
        super().wait()
        self._pull()

    def test(self):
        done = super().test()
        if done:
            self._pull()
        return done

    def start(self, group, mode=0):
        super().start(group, mode)
        return PythonEpoch(self, self.complete)

    def complete(self):
        super().complete()

    def lock(self, rank, lock_type=LOCK_EXCLUSIVE, mode=0):
        super().lock(rank, lock_type, mode)
        if rank == self._comm.rank:
            self._pull()
        return PythonEpoch(self, lambda: self.unlock(rank))

    def unlock(self, rank):
        if rank == self._comm.rank and not self._core.freed:
            self._push()
        super().unlock(rank)

    def lock_all(self, mode=0):
        super().lock_all(mode)
        self._pull()
        return PythonEpoch(self, self.unlock_all)

    def unlock_all(self):
        if not self._core.freed:
            self._push()
        super().unlock_all()

    def free(self):
        if not self._core.freed:
            self._push()
        super().free()
