// What `python -m rma --info` reports about libfabric.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "base/transport.hpp"

namespace rma {

// "major.minor" of the libfabric this process loads (loading it: libfabric_library.hpp).
std::string libfabric_version();
// The libfabrics the first load tries, in order (RMA_LIBFABRIC, as rma._job.settings.libfabric
// judges it): pairs of a file ("" for the system's) and where it comes from, "system",
// "bundled" (the wheel's own) or "RMA_LIBFABRIC". Then the file that load opened, and where it
// came from ("" before).
void use_libfabric(const std::vector<std::pair<std::string, std::string>>& candidates);
std::string libfabric_path();
std::string libfabric_origin();
// Whether this process has loaded libfabric so far (a job on one host never does).
bool libfabric_loaded() noexcept;
// Providers on this machine that offer what rma needs (RDM endpoints with FI_MSG, FI_RMA and
// FI_ATOMIC), in libfabric's order of preference.
std::vector<std::string> usable_providers();
// Of those, the ones that tell where each message came from (FI_SOURCE): rma takes messages
// across hosts only through these, unless RMA_TRUST_NETWORK=1 (fabric_transport.hpp).
std::vector<std::string> providers_that_know_sources();
// The modes an endpoint of `provider` bound to `node` would run under (fabric_modes.hpp), from
// the fi_getinfo the endpoint itself makes (FabricEndpoint::find), without opening anything;
// sleep_fd and mr_strict (RMA_MR_STRICT) as the endpoint's. Throws FabricError when no such
// provider serves rma.
ProviderModes provider_modes(const std::string& provider, const std::string& node, bool sleep_fd, bool mr_strict);

}  // namespace rma
