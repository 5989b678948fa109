"""Which class a new window gets: rma.Window, or rma.Window with what the job's settings add.

The one place that decides. A kind adds Python to some of rma.Window's calls, and is a mixin
that knows nothing of rma.Window (so that nothing it imports leads back to rma/window.py):

- RMA_CHECK (rma/check/window.py, `Checked`): the watch of win.local and win.shared(rank), the
  checker's own communicator and clock board, and free; not for a window with the no_check hint;
- RMA_MODEL=separate (rma/separate.py, `Separate`): win.local a private copy that meets the
  public one at synchronizations; not for dynamic windows.

Here they are composed onto the class that `Window._build` passes in: `CheckedWindow`,
`SeparateWindow` and `CheckedSeparateWindow` (the copies' meetings outermost, so that the
checker sees the calls they wrap). Without either setting nothing is composed, neither kind's
module is imported, and no Python comes between a window's calls and the core.
"""

from __future__ import annotations

import functools
from typing import TypeVar

from . import check
from ._job import settings

__all__ = ["window_class"]

W = TypeVar("W", bound=type)

# Read once, at import: every rank of a job has the same environment (rma._job.settings judges
# RMA_MODEL; rma.separate.MODEL says the same; rma.check.MODE is RMA_CHECK's).
_MODEL = settings.memory_model()


def window_class(plain: W, flavor: str, checked: bool) -> W:
    """Return the class of a new window of `flavor`: `plain` (rma.Window), with the checker
    under RMA_CHECK when `checked` (the window has no no_check hint), and the separate model
    under RMA_MODEL=separate unless the window is dynamic."""
    checking = checked and check.MODE is not None
    apart = _MODEL == "separate" and flavor != "dynamic"
    if not checking and not apart:
        return plain
    return _composed(plain, checking, apart)


@functools.cache
def _composed(plain: W, checking: bool, apart: bool) -> W:
    mixins: list[type] = []
    if apart:
        from .separate import Separate

        mixins.append(Separate)
    if checking:
        from .check.window import Checked

        mixins.append(Checked)
    name = ("Checked" if checking else "") + ("Separate" if apart else "") + plain.__name__
    for mixin in mixins:
        _adopt_docs(mixin, plain)
    namespace = {"__module__": mixins[0].__module__, "__qualname__": name, "__doc__": mixins[0].__doc__}
    return type(name, (*mixins, plain), namespace)


def _adopt_docs(mixin: type, plain: type) -> None:
    """Give the public methods a kind overrides the docstrings of the plain window's own, so
    that help() and IPython's ? say the same whatever the kind."""
    for name, method in list(vars(mixin).items()):
        if not name.startswith("_") and callable(method) and hasattr(plain, name):
            method.__doc__ = getattr(plain, name).__doc__
