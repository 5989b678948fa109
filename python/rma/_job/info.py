"""rma.info(): what a job started here would run on, asked of this machine.

One source for `python -m rma --info` (rma.launcher.info prints it) and for programs and bug
reports (`python -m rma --info --json`). Each fact comes from the code that acts on it: the
provider a job would choose from rma._job.join, the modes from the fi_getinfo a rank's endpoint
makes (_core.provider_modes), shared memory from the core making a segment and reading another
process, PMIx from the client rma.init() would load.
"""

from __future__ import annotations

import dataclasses
import sys
from dataclasses import dataclass
from typing import Any

from .._native import _core
from ..errors import FabricError, RMAError
from . import settings
from .join import choose_provider, needs_fabric
from .pmix_client import loadable_library, started_by_pmix

__all__ = ["Info", "Libfabric", "JobChoice", "ProviderModes", "SharedMemory", "Pmix", "info", "libfabric_source"]


def libfabric_source(candidates: settings.LibfabricCandidates) -> str:
    """Where the libfabric a rank loads comes from: the core's word once loaded ("system",
    "bundled": a wheel's own, or "RMA_LIBFABRIC": a path set there); before, or when none
    loads, the origin of the first one settings.libfabric() has it try."""
    return _core.libfabric_origin() or candidates[0][1]


@dataclass(frozen=True)
class Libfabric:
    """The libfabric this process loads (loading it), and the providers it offers rma."""

    version: str
    """"major.minor", e.g. "1.17"."""
    path: str
    """The file loaded, as /proc/self/maps shows it."""
    source: str
    """Why that file: "system" (the one the dynamic loader finds), "bundled" (the one a wheel of
    rma carries, where the system has none 1.17 or newer) or "RMA_LIBFABRIC" (a path set there)."""
    usable_providers: tuple[str, ...]
    """Providers that offer RDM endpoints with MSG, RMA and ATOMIC, in libfabric's order."""
    providers_that_know_sources: tuple[str, ...]
    """Of those, the ones that tell where each message came from (FI_SOURCE): across hosts, rma
    takes messages only through these unless RMA_TRUST_NETWORK=1."""
    problem: str
    """Why the library could not be loaded (then version and path are "", and no provider is
    listed); "" when it was."""


@dataclass(frozen=True)
class ProviderModes:
    """The modes an endpoint of the provider runs under, named as libfabric's headers name them."""

    provider: str
    """The provider fi_getinfo offered, e.g. "tcp;ofi_rxm"."""
    mr_mode: str
    """The domain's memory registration modes, e.g. "FI_MR_VIRT_ADDR|FI_MR_PROV_KEY" ("none" for 0)."""
    data_progress: str
    """The domain's data progress model, e.g. "FI_PROGRESS_MANUAL"."""
    control_progress: str
    """The domain's control progress model."""
    threading: str
    """The domain's threading model (rma asks for FI_THREAD_DOMAIN)."""
    cq_format: str
    """The format of rma's completion queue's entries."""
    cq_wait: str
    """The completion queue's wait object: FI_WAIT_FD when an idle rank sleeps on it (RMA_FABRIC_SLEEP)."""


@dataclass(frozen=True)
class JobChoice:
    """What a job with all ranks on this host, or with ranks on several hosts, would use."""

    same_host: bool
    """True for a job whose ranks all run on this host."""
    uses_libfabric: bool
    """False: every byte moves through shared memory and libfabric is never loaded."""
    reason: str
    """Why: "RMA_PROVIDER" (set), "automatic" (shm on one host, tcp across hosts), or
    "shared memory only" (no libfabric: RMA_TRANSPORT=libfabric or RMA_PROVIDER would open it)."""
    provider: str
    """The provider asked of libfabric ("" without libfabric)."""
    node: str
    """The address its endpoint binds to ("" for the provider's default)."""
    available: bool
    """Whether this host's libfabric offers the provider to rma."""
    knows_sources: bool
    """Whether it tells where each message came from (needed across hosts unless RMA_TRUST_NETWORK=1)."""
    modes: ProviderModes | None
    """Its modes in force; None without libfabric, or when libfabric refused it (see problem)."""
    problem: str
    """Why there are no modes although libfabric is used (fi_getinfo's error); "" otherwise."""


@dataclass(frozen=True)
class SharedMemory:
    """Whether the ranks of this host can share memory as rma does."""

    segments: bool
    """A segment can be made in /dev/shm (Window.allocate's memory, the inboxes, the bells)."""
    segments_problem: str
    """Why not ("" when segments)."""
    peer_reads: bool
    """The kernel lets a process read another's memory (process_vm_readv: Window.create between
    the ranks of a host, large allreduces); without it those go through messages."""
    peer_reads_problem: str
    """Why not ("" when peer_reads)."""


@dataclass(frozen=True)
class Pmix:
    """What rma.init() needs to join a job that mpirun or srun --mpi=pmix started."""

    library: str | None
    """The PMIx client library this process would load (e.g. "libpmix.so.2"), None when none loads."""
    server: bool
    """Whether a launcher's PMIx server started this process (PMIX_NAMESPACE and PMIX_RANK set)."""


@dataclass(frozen=True)
class Info:
    """What rma.info() found: the versions, libfabric, what a job would use, and what this host allows."""

    version: str
    """rma's version."""
    transport: str
    """RMA_TRANSPORT as judged: "auto", "shared-memory" or "libfabric"."""
    libfabric: Libfabric
    one_host: JobChoice
    """A job with all ranks on this host."""
    several_hosts: JobChoice
    """A job with ranks on several hosts."""
    shared_memory: SharedMemory
    pmix: Pmix

    def as_dict(self) -> dict[str, Any]:
        """Return the facts as nested dicts, lists and strings (what ``--info --json`` prints)."""
        return dataclasses.asdict(self)


def _job_choice(same_host: bool, fabric: Libfabric) -> JobChoice:
    requested, transport = settings.provider(), settings.transport()
    if not needs_fabric(requested, transport, same_host):
        return JobChoice(same_host, False, "shared memory only", "", "", False, False, None, "")
    provider, node = choose_provider(requested, same_host)
    sleep_fd = settings.fabric_sleep() and not same_host  # (as rma.init: only a job that spans hosts)
    modes, problem = None, fabric.problem
    if not problem:
        try:
            modes = ProviderModes(**dict(_core.provider_modes(provider, node, sleep_fd, settings.mr_strict())))
        except FabricError as exc:
            problem = str(exc)
    reason = "RMA_PROVIDER" if requested else "automatic"
    usable, knowing = fabric.usable_providers, fabric.providers_that_know_sources
    # (What it opens, where libfabric said: "tcp" may stand for net or tcp;ofi_rxm.)
    opened = modes.provider if modes is not None else provider
    available, knows_sources = settings.serves(provider, usable), settings.serves(opened, knowing)
    return JobChoice(same_host, True, reason, provider, node, available, knows_sources, modes, problem)


def _libfabric() -> Libfabric:
    """The libfabric a rank would load, loaded here; its loader's error when it cannot be."""
    library = settings.libfabric()
    _core.use_libfabric(library)
    try:
        version = _core.libfabric_version()  # (loads it, so the path is known)
    except RMAError as exc:
        return Libfabric("", "", libfabric_source(library), (), (), str(exc))
    usable, knowing = tuple(_core.usable_providers()), tuple(_core.providers_that_know_sources())
    return Libfabric(version, _core.libfabric_path(), libfabric_source(library), usable, knowing, "")


def info() -> Info:
    """Report what a job started here would run on: rma's and libfabric's versions, which
    libfabric file and why, the providers it offers, the provider a job on this host and one
    across hosts would choose and why, with the registration and progress modes in force,
    whether shared memory works here, and whether PMIx is at hand.

    Reads the RMA_* settings of the environment (SettingError for a bad one), loads libfabric
    (RMA_LIBFABRIC; one that cannot be loaded is reported in libfabric.problem), and tries a
    small /dev/shm segment and a process_vm_readv; starts no job.
    """
    fabric = _libfabric()
    segments_problem, peer_reads_problem = _core.shared_segment_problem(), _core.peer_read_problem()
    return Info(
        version=sys.modules["rma"].__version__,  # (not imported: rma imports this module)
        transport=settings.transport(),
        libfabric=fabric,
        one_host=_job_choice(True, fabric),
        several_hosts=_job_choice(False, fabric),
        shared_memory=SharedMemory(
            segments=not segments_problem,
            segments_problem=segments_problem,
            peer_reads=not peer_reads_problem,
            peer_reads_problem=peer_reads_problem,
        ),
        pmix=Pmix(library=loadable_library(), server=started_by_pmix()),
    )
