"""RMA_CHECK: the run-time checker of spec/002's rules on conflicting accesses.

With ``RMA_CHECK=1`` in the environment of the job, every window is an
`rma.check.window.CheckedWindow` and every communicator an `rma.check.comm.CheckedComm`;
without it, rma uses its plain classes, so an unchecked job pays nothing. The pieces, one
concept per file:

- src/core/check/ (compiled): the vector clock (`vector_clock.hpp`), what one access touched
  and when two conflict (`access.hpp`), what a target learnt of the accesses to its memory
  (`journal.hpp`), a window's checker with its messages (`window_checker.hpp`), the watches of
  origin and result arrays (`array_watches.hpp`), the bytes of the process's memory that
  pending calls use (`pending_memory.hpp`), and the steps of each call of a checked window
  (`call_steps.hpp`);
- src/bindings/check_state.hpp: what those steps ask of Python (the arrays, the GIL, the
  report), for the compiled window, which runs them; src/bindings/pending_arrays.hpp: the
  class of pending result arrays, changed in place from the call to its completion;
- `clock.py`: the clock's steps for the calls that order ranks in Python;
- `comm.py`: the communicator calls that order ranks carry the clock;
- `seen.py`: an ndarray subclass whose loads and stores are seen, the base of the next two;
- `local.py`: the owner's loads and stores of `win.local`;
- `pending.py`: reads of result arrays whose call has not completed;
- `window.py`: what the checker adds to a window (`Checked`, which rma/_window_kinds.py composes
  onto rma.Window): the watch of `win.local`, the checker's clock board, free.

The first conflict raises `rma.ConflictError` on the rank that finds it (``RMA_CHECK=warn``:
a `ConflictWarning` instead, and the job goes on).
"""

from __future__ import annotations

import warnings

from .. import _core
from .._job import settings
from ..errors import ConflictError

__all__ = ["MODE", "ConflictWarning", "report"]


class ConflictWarning(RuntimeWarning):
    """What RMA_CHECK=warn issues where RMA_CHECK=1 raises rma.ConflictError."""


# Read once, at import: every rank of a job has the same environment.
MODE = settings.check_mode()  # (rma._job.settings judges RMA_CHECK)


def report(message: str) -> None:
    """Raise the conflict (RMA_CHECK=1) or warn of it and go on (RMA_CHECK=warn)."""
    _core._trace_error("ConflictWarning" if MODE == "warn" else "ConflictError", message)  # (RMA_TRACE)
    if MODE == "warn":
        warnings.warn(message, ConflictWarning, stacklevel=3)
    else:
        raise ConflictError(message)
