"""Joining and leaving the job: rma.init() and rma.finalize().

A rank learns its place in the job from the environment the launcher set (see the README's
configuration table), meets the other ranks at the launcher's rendezvous store, picks a
libfabric provider, and exchanges endpoint addresses. Without RMA_STORE a process is a job of
one rank, so `python script.py` just works.
"""

from __future__ import annotations

import atexit
import os
import signal
import socket
import sys
import threading
import traceback as tracebacks

from .._native import _core
from ..comm import Comm
from ..errors import BootstrapError, RMAError
from .pmix_client import PmixClient, started_by_pmix
from .shm_files import remove_stale_shm_files
from .spawn import traceback_label

__all__ = ["init", "finalize", "is_initialized", "provider", "requested_transport", "transport_setting"]

# Provider shorthands accepted by RMA_PROVIDER and rmarun --provider.
_PROVIDER_ALIASES = {"shm": "shm", "tcp": "tcp;ofi_rxm", "tcp;ofi_rxm": "tcp;ofi_rxm"}
# Ranks started by other launchers: where they put the rank and the size.
_RANK_VARIABLES = ("RMA_RANK", "SLURM_PROCID", "PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK")
_SIZE_VARIABLES = ("RMA_SIZE", "SLURM_NTASKS", "PMI_SIZE", "OMPI_COMM_WORLD_SIZE")

_lock = threading.Lock()
_job: _Job | None = None
_finalized = False
_failed = False  # set by our excepthook: the process is ending with an uncaught exception


class _Job:
    """What init() built: the C++ runtime, the store connection and the world communicator."""

    def __init__(self, runtime: _core.Runtime, store, world: Comm) -> None:
        self.runtime = runtime
        self.store = store
        self.world = world


def _environment_int(names: tuple[str, ...], default: int | None) -> int | None:
    for name in names:
        value = os.environ.get(name)
        if value is not None and value != "":
            try:
                return int(value)
            except ValueError:
                raise BootstrapError(f"rma.init: {name}={value!r} is not an integer") from None
    return default


def _float_setting(name: str, default: float) -> float:
    value = os.environ.get(name, "")
    if value == "":
        return default
    try:
        return float(value)
    except ValueError:
        raise BootstrapError(f"rma.init: {name}={value!r} is not a number") from None


def _switch_setting(name: str) -> bool:
    """Return a setting that is 1 (the default) or 0; BootstrapError for anything else."""
    value = os.environ.get(name, "").strip() or "1"
    if value not in ("0", "1"):
        raise BootstrapError(f"rma.init: {name}={value!r}: use 1 or 0")
    return value == "1"


def malloc_tuning() -> bool:
    """Whether rma.init raises glibc's malloc thresholds (RMA_MALLOC_TUNING, default 1): not when
    the user set them through GLIBC_TUNABLES."""
    tunables = os.environ.get("GLIBC_TUNABLES", "")
    return (
        _switch_setting("RMA_MALLOC_TUNING")
        and "malloc.mmap_threshold" not in tunables
        and "malloc.trim_threshold" not in tunables
    )


def requested_transport() -> str:
    """Return RMA_TRANSPORT (auto, shared-memory or libfabric), the one place it is read.

    init() then checks that every rank gives the same, and the runtime keeps it
    (transport_setting()); rmarun --info shows it.
    """
    transport = os.environ.get("RMA_TRANSPORT", "").strip() or "auto"
    if transport not in ("auto", "shared-memory", "libfabric"):
        raise BootstrapError(f"rma.init: RMA_TRANSPORT={transport!r}: use auto, shared-memory or libfabric")
    return transport


def timeout_setting() -> float:
    """Return RMA_TIMEOUT: the deadline of every blocking call in seconds (0 = none)."""
    return _float_setting("RMA_TIMEOUT", 300.0)


def choose_provider(requested: str, same_host: bool) -> tuple[str, str]:
    """Return the libfabric provider and bind address for a job.

    `requested` is RMA_PROVIDER ("" or "auto" to choose): shm when every rank shares the host,
    tcp;ofi_rxm otherwise. tcp binds to loopback when the job is on one host.
    """
    requested = requested.strip()
    if requested in ("", "auto"):
        provider = "shm" if same_host else "tcp;ofi_rxm"
    else:
        provider = _PROVIDER_ALIASES.get(requested, requested)
    node = "127.0.0.1" if provider.split(";")[0] in ("tcp", "sockets") and same_host else ""
    return provider, node


def is_initialized() -> bool:
    """Return True between a successful init() and finalize()."""
    return _job is not None


def provider() -> str | None:
    """Return the libfabric provider this rank's job runs on, or None before init()."""
    job = _job
    return job.runtime.provider if job is not None else None


def transport_setting() -> str | None:
    """Return RMA_TRANSPORT as every rank agreed at init(): auto, shared-memory or libfabric; None before."""
    job = _job
    return job.runtime.transport_setting if job is not None else None


def init() -> Comm:
    """Join the job and return the communicator of all its ranks.

    Idempotent: later calls return the same communicator. A process started without a
    launcher (no RMA_STORE in the environment) is a job of one rank.
    """
    global _job
    with _lock:
        if _job is not None:
            return _job.world
        if _finalized:
            raise RMAError("rma.init: the job was already finalized in this process")
        _job = _join()
        _install_exit_hooks()
        return _job.world


def fabric_sleep_setting() -> bool:
    """Return RMA_FABRIC_SLEEP (1, the default, or 0): whether an idle rank of a job that spans
    hosts sleeps on the fabric's wait fd (under 0.1% of a core; a message round trip over tcp
    costs about 10 us more) rather than polling the fabric every RMA_PROGRESS_SLEEP_US (about
    1.3% of a core)."""
    return _switch_setting("RMA_FABRIC_SLEEP")


def _open_runtime(
    rank: int,
    size: int,
    provider: str,
    node: str,
    timeout: float,
    sleep_us: int,
    transport: str,
    spans_hosts: bool = False,
):
    """Open this rank's endpoint, after clearing what dead processes left in /dev/shm (the shm
    provider's regions, rma's bells): a file named after our own pid would make ours fail."""
    remove_stale_shm_files()
    if malloc_tuning():
        _core.tune_malloc()
    hang_report = _float_setting("RMA_HANG_REPORT", 10.0)
    fabric_sleep = fabric_sleep_setting() and spans_hosts  # (checked on one host too)
    return _core.Runtime(
        rank, size, provider, node, timeout, sleep_us, transport, hang_report, fabric_sleep, trust_network_setting()
    )


def trust_network_setting() -> bool:
    """Return RMA_TRUST_NETWORK (default 0): 1 lets a job span hosts through a libfabric provider
    that cannot tell where a message came from (no FI_SOURCE), trusting every machine on the network."""
    value = os.environ.get("RMA_TRUST_NETWORK", "").strip() or "0"
    if value not in ("0", "1"):
        raise BootstrapError(f"rma.init: RMA_TRUST_NETWORK={value!r}: use 0 or 1")
    return value == "1"


def _join() -> _Job:
    rank = _environment_int(_RANK_VARIABLES, None)
    size = _environment_int(_SIZE_VARIABLES, None)
    store_address = os.environ.get("RMA_STORE", "")
    timeout = timeout_setting()
    sleep_us = int(_float_setting("RMA_PROGRESS_SLEEP_US", 1000))
    requested = os.environ.get("RMA_PROVIDER", "")
    transport = requested_transport()

    if not store_address and started_by_pmix():
        # An MPI launcher (mpirun, srun --mpi=pmix) started the ranks: its PMIx server is the store.
        store = PmixClient(timeout)
        rank, size = store.rank, store.size
    elif not store_address:
        if size not in (None, 1):
            raise BootstrapError(f"rma.init: a job of {size} ranks {_without_store_hint()}")
        provider, node = choose_provider(requested, same_host=True)
        runtime = _open_runtime(0, 1, provider, node, timeout, sleep_us, transport)
        runtime.connect([runtime.address()], [socket.gethostname()])
        return _Job(runtime, None, _world_comm(runtime))
    else:
        if rank is None or size is None:
            raise BootstrapError("rma.init: RMA_STORE is set but RMA_RANK or RMA_SIZE is not")
        if not 0 <= rank < size:
            raise BootstrapError(f"rma.init: rank {rank} is outside a job of size {size}")
        from .store_client import StoreClient

        secret = os.environ.get("RMA_SECRET", "")
        store = StoreClient(store_address, secret, rank, timeout=timeout if timeout > 0 else None)
    try:
        if isinstance(store, PmixClient):
            _check_launcher_size(store.size)
        # Round 1: where every rank runs, which decides the provider, its RMA_TRANSPORT, and
        # its rma version (ranks of different versions may not speak the same messages).
        version = sys.modules["rma"].__version__
        store.put(f"host/{rank}", b"\0".join(part.encode() for part in (socket.gethostname(), transport, version)))
        hosts, transports, versions = zip(*(e.split(b"\0") for e in store.get_many([f"host/{r}" for r in range(size)])))
        if len(set(versions)) != 1:
            found = "; ".join(
                f"rank {r} on {hosts[r].decode()} runs {versions[r].decode()}"
                for r in sorted({versions.index(v) for v in versions})
            )
            raise BootstrapError(f"rma.init: the ranks run different versions of rma ({found}); install one everywhere")
        if len(set(transports)) != 1:
            found = ", ".join(sorted({t.decode() for t in transports}))
            raise BootstrapError(f"rma.init: the ranks disagree on RMA_TRANSPORT ({found}); give every rank the same")
        same_host = len(set(hosts)) == 1
        if isinstance(store, PmixClient):
            store.watch_departures([host.decode() for host in hosts])
        provider, node = choose_provider(requested, same_host=same_host)
        runtime = _open_runtime(rank, size, provider, node, timeout, sleep_us, transport, spans_hosts=not same_host)
        # Round 2: endpoint addresses, tagged with the provider so a mismatch is caught here.
        store.put(f"address/{rank}", provider.encode() + b"\0" + runtime.address())
        entries = store.get_many([f"address/{r}" for r in range(size)])
        names = []
        for other, entry in enumerate(entries):
            other_provider, _, name = entry.partition(b"\0")
            if other_provider.decode() != provider:
                raise BootstrapError(
                    f"rma.init: rank {rank} uses provider {provider!r} but rank {other} uses "
                    f"{other_provider.decode()!r}; give every rank the same RMA_PROVIDER"
                )
            names.append(name)
        runtime.connect(names, hosts)
        store.on_peer_dead(lambda dead: _peer_died(runtime, dead, store.unreachable(dead)))
        world = _world_comm(runtime)
        # Nobody leaves init before every rank has connected: a rank that ended at once would
        # take its endpoint away from a peer still connecting to it (shm: fi_av_insert fails).
        world.barrier()
    except BaseException:
        store.close(clean=False)
        raise
    return _Job(runtime, store, world)


def _world_comm(runtime: _core.Runtime) -> Comm:
    """Return the world communicator: the checked kind under RMA_CHECK (rma/check/)."""
    from .. import check

    if check.MODE is None:
        return Comm(runtime.world())
    from ..check.clock import start
    from ..check.comm import CheckedComm

    world = CheckedComm(runtime.world())
    start(world.rank, world.size)
    return world


def _check_launcher_size(pmix_size: int) -> None:
    """A launcher that set a job size (OMPI_COMM_WORLD_SIZE, SLURM_STEP_NUM_TASKS) other than
    its PMIx job's started each rank as a job of its own (a PMIx server of another version, say):
    joining would run N jobs of one rank each, silently."""
    # Open MPI's own count first: its mpirun inside a Slurm allocation starts its daemons with
    # srun, whose step counts nodes, not ranks.
    name = "OMPI_COMM_WORLD_SIZE" if "OMPI_COMM_WORLD_SIZE" in os.environ else "SLURM_STEP_NUM_TASKS"
    value = os.environ.get(name, "")
    if value.isdigit() and int(value) != pmix_size:
        raise BootstrapError(
            f"rma.init: the launcher started {value} ranks ({name}={value}) but its PMIx job has "
            f"{pmix_size}; does the launcher's PMIx match this machine's libpmix (srun --mpi=pmix, "
            "Open MPI's own mpirun)?"
        )


def _without_store_hint() -> str:
    """Why a process of a job of several ranks found no way to meet the others."""
    if os.environ.get("SLURM_PROCID"):
        return "runs under Slurm without PMIx: start the ranks with `srun --mpi=pmix`, or rmarun"
    if os.environ.get("PMI_RANK"):
        return (
            "was started by a launcher that speaks PMI, not PMIx (MPICH's mpiexec?): use Open MPI's "
            "mpirun, `srun --mpi=pmix` or rmarun"
        )
    return (
        "needs the rendezvous store: start it with `rmarun -n N ...`, or set RMA_STORE and "
        "RMA_SECRET (see `rmarun --serve-store`)"
    )


def _peer_died(runtime: _core.Runtime, rank: int, unreachable: bool) -> None:
    """Take the store's news of a death (rank -1: the store itself is gone; unreachable: silent
    for RMA_LINK_TIMEOUT rather than ended)."""
    runtime.mark_peer_dead(rank, unreachable)
    if rank == -1 and os.environ.get("RMA_LAUNCHER") == "rmarun":
        # rmarun was killed: nobody is left to stop this rank, so it stops itself.
        os.kill(os.getpid(), signal.SIGTERM)


def finalize() -> None:
    """Leave the job: wait for every rank to finalize, then release the fabric.

    Optional: done at interpreter exit. Collective over all ranks of the job. Idempotent.
    """
    _leave(collective=True)


def _leave(collective: bool) -> None:
    global _job, _finalized
    with _lock:
        job, _job = _job, None
        if job is None:
            return
        _finalized = True
    job.runtime.finalize(collective)
    if job.store is not None:
        # A rank that ends with an uncaught exception says no goodbye: the store then tells the
        # others it died, and their blocked calls raise PeerError instead of hanging.
        job.store.close(clean=collective)


_hooks_installed = False


def _install_exit_hooks() -> None:
    global _hooks_installed
    if _hooks_installed:
        return
    _hooks_installed = True
    previous_hook = sys.excepthook

    def note_failure(kind, value, traceback):
        global _failed
        _failed = True
        if os.environ.get("RMA_LAUNCHER") == "rmarun" and _job is not None:
            # Among the other ranks' output (rmarun relays line by line), the traceback comes
            # under its rank's label, each line marked with the rank.
            rank = _job.world.rank
            if previous_hook is sys.__excepthook__:
                lines = tracebacks.format_exception(kind, value, traceback)
                text = "".join(f"[rank {rank}] {line}" for line in "".join(lines).splitlines(True))
                sys.stderr.write(f"{traceback_label(rank)}\n{text}")
                sys.stderr.flush()
                return
            print(traceback_label(rank), file=sys.stderr, flush=True)
        previous_hook(kind, value, traceback)

    sys.excepthook = note_failure
    atexit.register(lambda: _leave(collective=not _failed))
