// What `python -m rma --info` reports about libfabric.
#pragma once

#include <string>
#include <vector>

namespace rma {

std::string libfabric_version();
// Providers on this machine that offer what rma needs (RDM endpoints with FI_MSG, FI_RMA and
// FI_ATOMIC), in libfabric's order of preference.
std::vector<std::string> usable_providers();

}  // namespace rma
