"""What a rank opens for RMA_PROVIDER=tcp (and, across hosts, for the automatic choice), by the
rule of src/core/fabric/fabric_endpoint.cpp (FabricEndpoint::find): libfabric's own RDM endpoint
over TCP where the loaded libfabric has one (net in 1.17, bare tcp from 1.18 on), else
tcp;ofi_rxm. Computed from what that libfabric lists, so that a test fails when rma settles for
the slower layered one while the native one is there."""

from __future__ import annotations

from rma._native import _core


def tcp_provider_opened() -> str:
    usable = _core.usable_providers()
    if "net" in usable:
        return "net"
    major, minor = (int(part) for part in _core.libfabric_version().split(".")[:2])
    return "tcp" if (major, minor) >= (1, 18) else "tcp;ofi_rxm"


def provider_opened(requested: str) -> str:
    """The provider a rank opens when RMA_PROVIDER is `requested` ("tcp" or another name)."""
    return tcp_provider_opened() if requested == "tcp" else requested
