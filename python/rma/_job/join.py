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
from ..errors import BootstrapError, FabricError, RMAError
from . import settings
from .pmix_client import PmixClient, started_by_pmix
from .settings import JobSettings
from .shm_files import cleanup_shm_files, remove_stale_shm_files
from .spawn import traceback_label

__all__ = ["init", "finalize", "is_initialized", "provider", "transport_setting", "choose_provider"]


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


def choose_provider(requested: str, same_host: bool) -> tuple[str, str]:
    """Return the libfabric provider and bind address for a job.

    `requested` is RMA_PROVIDER as settings.provider() gives it ("" to choose): shm when every
    rank shares the host, tcp otherwise (libfabric's fastest endpoint over TCP: net or tcp, else
    tcp;ofi_rxm). tcp binds to loopback when the job is on one host.
    """
    provider = requested or ("shm" if same_host else "tcp")
    node = "127.0.0.1" if provider.split(";")[0] in ("tcp", "net", "sockets") and same_host else ""
    return provider, node


def needs_fabric(requested: str, transport: str, same_host: bool) -> bool:
    """Whether a rank opens a libfabric endpoint (and so loads libfabric at all): when the job
    spans hosts, when RMA_TRANSPORT=libfabric sends everything through it, or when RMA_PROVIDER
    names a provider (`requested`, "" for automatic), which is then opened and checked as asked.
    A job on one host otherwise moves every byte through shared memory, and skipping libfabric
    saves each rank about 0.2 s of start-up (src/core/fabric/libfabric_library.hpp)."""
    return not same_host or transport == "libfabric" or bool(requested)


def is_initialized() -> bool:
    """Return True between a successful init() and finalize()."""
    return _job is not None


def provider() -> str | None:
    """Return the libfabric provider this rank's job runs on; None before init(), and in a job
    that uses no libfabric (needs_fabric)."""
    job = _job
    return (job.runtime.provider or None) if job is not None else None


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
        # (After the exit hooks: atexit runs the trace's writing first, while the job is up.)
        from ..trace import recording

        recording.start_from_environment(_job.world)
        return _job.world


def _open_runtime(
    rank: int, size: int, provider: str, node: str, job: JobSettings, spans_hosts: bool = False
) -> _core.Runtime:
    """Open this rank's endpoint, after clearing what dead processes left in /dev/shm (the shm
    provider's regions, rma's bells): a file named after our own pid would make ours fail."""
    remove_stale_shm_files()
    if job.malloc_tuning:
        _core.tune_malloc()
    fabric_sleep = job.fabric_sleep and spans_hosts
    fabric = needs_fabric(job.provider, job.transport, same_host=not spans_hosts)
    try:
        return _core.Runtime(
            rank,
            size,
            provider,
            node,
            job.timeout,
            job.progress_sleep_us,
            _core.TransportSetting(job.transport),  # (judged by settings.transport)
            job.hang_report,
            fabric_sleep,
            job.trust_network,
            fabric,
            job.mr_strict,
        )
    except FabricError:
        # A provider asked for by a name that this host's libfabric does not serve is a bad
        # setting: one line that names it and the usable ones says more than fi_getinfo's error.
        unusable = settings.unusable_provider(_core.usable_providers())
        if unusable is not None:
            raise unusable from None
        raise


def _join() -> _Job:
    # Every setting first, so that a bad one ends the rank before anything started (and rmarun,
    # which judged them already, never starts ranks that would meet one).
    job = settings.job_settings()
    rank, size = settings.rank_and_size()
    store_address = settings.store_address()
    timeout, requested, transport = job.timeout, job.provider, job.transport
    _core.use_libfabric(job.libfabric)  # (loaded only if the job needs it, needs_fabric)

    if not store_address and started_by_pmix():
        # An MPI launcher (mpirun, srun --mpi=pmix) started the ranks: its PMIx server is the store.
        store = PmixClient(timeout)
        rank, size = store.rank, store.size
    elif not store_address:
        if size not in (None, 1):
            raise BootstrapError(f"rma.init: a job of {size} ranks {_without_store_hint()}")
        provider, node = choose_provider(requested, same_host=True)
        runtime = _open_runtime(0, 1, provider, node, job)
        runtime.connect([runtime.address()], [socket.gethostname()])
        return _Job(runtime, None, _world_comm(runtime))
    else:
        from .store_client import StoreClient

        assert rank is not None and size is not None  # (settings.store_address)
        store = StoreClient(
            store_address, settings.secret(), rank, timeout=timeout if timeout > 0 else None, report_unreachable=True
        )
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
        runtime = _open_runtime(rank, size, provider, node, job, spans_hosts=not same_host)
        # Round 2: endpoint addresses, tagged with the provider ("" without libfabric) so that a
        # mismatch is caught here.
        store.put(f"address/{rank}", runtime.provider.encode() + b"\0" + runtime.address())
        entries = store.get_many([f"address/{r}" for r in range(size)])
        names = []
        for other, entry in enumerate(entries):
            other_provider, _, name = entry.partition(b"\0")
            if other_provider.decode() != runtime.provider:
                mine, theirs = (repr(p) if p else "no libfabric" for p in (runtime.provider, other_provider.decode()))
                raise BootstrapError(
                    f"rma.init: rank {rank} uses provider {mine} but rank {other} uses "
                    f"{theirs}; give every rank the same RMA_PROVIDER"
                )
            names.append(name)
        runtime.connect(names, hosts)
        # (A PMIx job's watch never reports the store lost: it names rank 0 instead.)
        where = getattr(store, "address", "")
        store.on_peer_dead(lambda dead: _peer_died(runtime, dead, store.unreachable(dead), where))
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


def _peer_died(runtime: _core.Runtime, rank: int, unreachable: bool, store_address: str) -> None:
    """Take the store's news of a death (rank -1: the store itself is gone; unreachable: silent
    for RMA_LINK_TIMEOUT rather than ended)."""
    if rank == -1 and settings.under_rmarun():
        _leave_the_lost_job(runtime.rank, store_address, unreachable)
    runtime.mark_peer_dead(rank, unreachable)


def _leave_the_lost_job(rank: int, address: str, unreachable: bool) -> None:
    """A rank of rmarun that lost the job's store stops itself: rmarun is gone, or this host is
    cut off from it, so nobody else will. It says so in one line (its blocked call's PeerError
    would follow it with a traceback, and a rank outside any call would say nothing), removes
    its files from /dev/shm (SIGTERM ends it before any destructor runs; its segments stay
    mapped until then), and ends as rmarun would end it."""
    if unreachable:
        why = (
            f"no answer for {settings.link_timeout():g} s: RMA_LINK_TIMEOUT; this host's link is down, "
            "or the store's host is gone"
        )
    else:
        why = "its connection closed: the launcher is gone"
    try:
        print(f"rma: rank {rank}: lost the job's store at {address} ({why}); leaving", file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass  # (stderr went with the remote shell's connection)
    cleanup_shm_files([os.getpid()])
    os.kill(os.getpid(), signal.SIGTERM)
    # Still here: the program handles SIGTERM itself; its blocked calls end with PeerError.


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
    if job.store is not None and not collective:
        # A rank that ends with an uncaught exception says no goodbye: the store then tells the
        # others it died, and their blocked calls raise PeerError instead of hanging. It tells
        # the store before its endpoint closes, so that no other rank can fail on that first
        # (a send refused): the store learns of this death before the others' (rmarun's
        # summary names the first rank the store saw die).
        job.store.close(clean=False)
    job.runtime.finalize(collective)
    if job.store is not None and collective:
        job.store.close(clean=True)


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
        if settings.under_rmarun() and _job is not None:
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
