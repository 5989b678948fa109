"""rmarun --info: rma.info() in lines for a person, or (--json) as JSON for a bug report."""

from __future__ import annotations

import json

__all__ = ["print_info"]

# How the libfabric line says where the file came from (Libfabric.source); a source without
# words here is printed as it is.
_SOURCE_WORDS = {"system": "the system's", "bundled": "rma's own"}


def print_info(as_json: bool = False) -> int:
    """Print rma.info(): the versions, libfabric and its providers, what a job would use and
    under which modes, and whether shared memory and PMIx are available here."""
    # Imported here: only --info needs the compiled core (libfabric takes long to load).
    from .._job.info import info

    facts = info()
    if as_json:
        print(json.dumps(facts.as_dict(), indent=2))
        return 0
    fabric = facts.libfabric
    print(f"rma {facts.version}")
    source = _SOURCE_WORDS.get(fabric.source, fabric.source)
    if fabric.problem:
        print(f"libfabric NOT loaded ({source}): {fabric.problem}")
    else:
        print(f"libfabric {fabric.version}: {fabric.path} ({source})")
    print(f"usable providers (RDM endpoints with MSG, RMA and ATOMIC): {', '.join(fabric.usable_providers) or 'none'}")
    print(
        "providers that tell where a message came from (FI_SOURCE; across hosts rma takes messages only "
        f"through these, unless RMA_TRUST_NETWORK=1): {', '.join(fabric.providers_that_know_sources) or 'none'}"
    )
    for choice in (facts.one_host, facts.several_hosts):
        where = "all ranks on this host" if choice.same_host else "ranks on several hosts"
        if not choice.uses_libfabric:
            print(
                f"a job with {where}: no libfabric (shared memory only; never loaded; RMA_TRANSPORT=libfabric "
                "or RMA_PROVIDER would open it)"
            )
            continue
        bound = f", bound to {choice.node}" if choice.node else ""
        source = f"RMA_PROVIDER={choice.provider}" if choice.reason == "RMA_PROVIDER" else "automatic"
        state = "" if choice.available else "  (NOT available here)"
        if not choice.same_host and choice.available and not choice.knows_sources:
            state += "  (cannot tell a message's source: refused across hosts unless RMA_TRUST_NETWORK=1)"
        modes = choice.modes
        # ("tcp" names a choice among libfabric's endpoints over TCP: say which one it makes.)
        opens = f", which opens {modes.provider}" if modes is not None and modes.provider != choice.provider else ""
        print(f"a job with {where}: libfabric provider {choice.provider}{bound} ({source}){opens}{state}")
        if modes is not None:
            print(
                f"  modes: mr_mode {modes.mr_mode}; data progress {modes.data_progress}, control progress "
                f"{modes.control_progress}; {modes.threading}; completions {modes.cq_format}, {modes.cq_wait}"
            )
        else:
            print(f"  modes: none ({'libfabric not loaded' if fabric.problem else choice.problem})")
    if facts.transport == "libfabric":
        print(f"between the ranks of one host (RMA_TRANSPORT={facts.transport}): libfabric for windows and messages")
    else:
        print(
            f"between the ranks of one host (RMA_TRANSPORT={facts.transport}): shared memory (Window.allocate "
            "memory in shared segments, Window.create through process_vm_writev/readv, messages through "
            "shared-memory inboxes; synchronization in shared memory when every rank of a window is on "
            "this host); between hosts: libfabric. A window whose ranks span hosts mixes the two, per "
            "peer (win.transport_to(rank)); shared-memory refuses windows that span hosts"
        )
    shared = facts.shared_memory
    segments = "yes" if shared.segments else f"NO ({shared.segments_problem})"
    peer_reads = (
        "yes"
        if shared.peer_reads
        else (
            f"NO ({shared.peer_reads_problem}; Window.create then reaches its peers through libfabric or "
            "messages, slower)"
        )
    )
    print(f"shared memory: segments in /dev/shm: {segments}; reading another process's memory: {peer_reads}")
    pmix = facts.pmix
    library = pmix.library or "NOT found (apt-get install libpmix2, for jobs that mpirun or srun --mpi=pmix start)"
    server = "yes" if pmix.server else "no (PMIX_NAMESPACE and PMIX_RANK unset)"
    print(f"PMIx: client library {library}; a launcher's PMIx server started this process: {server}")
    return 0
