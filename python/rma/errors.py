"""The exceptions of rma: every one derives from RMAError.

Argument checks raise plain TypeError / ValueError instead, as NumPy does.
"""

__all__ = [
    "RMAError",
    "EpochError",
    "TargetRangeError",
    "PeerError",
    "FabricError",
    "BootstrapError",
    "RMATimeoutError",
    "OutOfMemoryError",
    "ConflictError",
]


class RMAError(RuntimeError):
    """Base class of every error raised by rma."""


class EpochError(RMAError):
    """A call that the window's current epoch does not permit."""


class TargetRangeError(RMAError, IndexError):
    """A target region that lies outside the target rank's window."""


class PeerError(RMAError):
    """Another rank of the job died or cannot be reached."""


class FabricError(RMAError):
    """A libfabric call failed; the message names the call and libfabric's reason."""


class BootstrapError(RMAError):
    """Joining the job failed: the rendezvous store is unreachable or refused us."""


class RMATimeoutError(RMAError, TimeoutError):
    """A blocking call passed its deadline (RMA_TIMEOUT)."""


class OutOfMemoryError(RMAError, MemoryError):
    """Window memory that cannot be had, raised by the window's creation on every rank.

    The message names the limit met and how to raise it: /dev/shm's size and free space (a
    container's is 64 MiB unless ``docker run --shm-size``), a memory cgroup's limit, or the
    mappings a process may hold (``vm.max_map_count``).
    """


class ConflictError(RMAError):
    """RMA_CHECK found an erroneous program: two conflicting accesses that nothing orders.

    The message names both accesses: the call, its origin and target ranks, the bytes, the
    epoch and the source line of each.
    """
