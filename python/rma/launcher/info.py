"""rmarun --info: the versions, the usable providers, and what a job here would use."""

from __future__ import annotations

__all__ = ["print_info"]


def print_info() -> int:
    """Print the rma version, libfabric's version and providers, and what a job would use."""
    # Imported here: only --info needs the compiled core (libfabric takes long to load).
    from .. import __version__
    from .._job import settings
    from .._job.join import choose_provider, needs_fabric
    from .._native import _core

    requested = settings.provider()
    transport = settings.transport()
    library = settings.libfabric()
    _core.use_libfabric(library)

    print(f"rma {__version__}")
    version = _core.libfabric_version()
    origin = {"system": "the system's", "bundled": "rma's own"}.get(_core.libfabric_origin(), "RMA_LIBFABRIC")
    print(f"libfabric {version}: {_core.libfabric_path()} ({origin})")
    usable = _core.usable_providers()
    print(f"usable providers (RDM endpoints with MSG, RMA and ATOMIC): {', '.join(usable) or 'none'}")
    knowing = _core.providers_that_know_sources()
    print(
        "providers that tell where a message came from (FI_SOURCE; across hosts rma takes messages only "
        f"through these, unless RMA_TRUST_NETWORK=1): {', '.join(knowing) or 'none'}"
    )
    source = f"RMA_PROVIDER={requested}" if requested else "automatic"
    for where, same_host in (("all ranks on this host", True), ("ranks on several hosts", False)):
        if not needs_fabric(requested, transport, same_host):
            print(
                f"a job with {where}: no libfabric (shared memory only; never loaded; RMA_TRANSPORT=libfabric "
                "or RMA_PROVIDER would open it)"
            )
            continue
        provider, node = choose_provider(requested, same_host)
        bound = f", bound to {node}" if node else ""
        state = "" if provider in usable else "  (NOT available here)"
        if not same_host and provider in usable and provider not in knowing:
            state += "  (cannot tell a message's source: refused across hosts unless RMA_TRUST_NETWORK=1)"
        print(f"a job with {where}: libfabric provider {provider}{bound} ({source}){state}")
    if transport == "libfabric":
        print(f"between the ranks of one host (RMA_TRANSPORT={transport}): libfabric for windows and messages")
    else:
        print(
            f"between the ranks of one host (RMA_TRANSPORT={transport}): shared memory (Window.allocate "
            "memory in shared segments, Window.create through process_vm_writev/readv, messages through "
            "shared-memory inboxes; synchronization in shared memory when every rank of a window is on "
            "this host); between hosts: libfabric. A window whose ranks span hosts mixes the two, per "
            "peer (win.transport_to(rank)); shared-memory refuses windows that span hosts"
        )
    return 0
