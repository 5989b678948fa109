"""MPI.Pickle and MPI.pickle of the mpi4py facade: the serializer of the object calls.

rma's object messages (send, recv, isend, irecv, the collectives of objects) are pickled by
Python's pickle at its highest protocol, in rma's compiled calls; MPI.pickle is that serializer,
for programs that pickle a message themselves (a buffer send of pickled bytes, received by an
object recv). A Pickle made with other functions serves its own dumps/loads only: the compiled
calls do not take it (rma.compat says so rather than pretend otherwise)."""

from __future__ import annotations

import pickle as _pickle
from collections.abc import Callable
from typing import Any

from .not_covered import refuse

__all__ = ["Pickle", "pickle"]


class Pickle:
    """A serializer: dumps(obj) -> bytes and loads(data) -> obj, with a pickle protocol."""

    PROTOCOL: int | None = _pickle.HIGHEST_PROTOCOL
    THRESHOLD: int = 1024**2 // 4  # (mpi4py's: out-of-band buffers from this size; rma has none)

    def __init__(
        self,
        dumps: Callable[..., bytes] | None = None,
        loads: Callable[[Any], Any] | None = None,
        protocol: int | None = None,
        threshold: int | None = None,
    ) -> None:
        self._dumps = dumps if dumps is not None else _pickle.dumps
        self._loads = loads if loads is not None else _pickle.loads
        self.PROTOCOL = protocol if protocol is not None or dumps is not None else _pickle.HIGHEST_PROTOCOL
        self.THRESHOLD = threshold if threshold is not None else Pickle.THRESHOLD

    def dumps(self, obj: Any) -> bytes:
        return self._dumps(obj) if self.PROTOCOL is None else self._dumps(obj, self.PROTOCOL)

    def loads(self, data: Any) -> Any:
        return self._loads(data)


pickle = Pickle()


# Out-of-band pickling (pickle protocol 5's buffers): rma's object messages are one pickle each.
refuse(Pickle, "dumps_oob loads_oob")
