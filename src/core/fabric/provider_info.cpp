#include "fabric/provider_info.hpp"

#include <rdma/fabric.h>

#include <algorithm>

#include "base/errors.hpp"
#include "fabric/fabric_endpoint.hpp"
#include "fabric/fabric_modes.hpp"
#include "fabric/libfabric_library.hpp"
#include "fabric/local_registrations.hpp"

namespace rma {

std::string libfabric_version() {
  uint32_t version = fabric::version();
  return std::to_string(FI_MAJOR(version)) + "." + std::to_string(FI_MINOR(version));
}

namespace {
// The names Python gives the origins of a library (rma._job.settings.libfabric).
constexpr std::pair<const char*, fabric::LibraryOrigin> kOrigins[] = {
    {"system", fabric::LibraryOrigin::system},
    {"bundled", fabric::LibraryOrigin::bundled},
    {"RMA_LIBFABRIC", fabric::LibraryOrigin::setting},
};
}  // namespace

void use_libfabric(const std::vector<std::pair<std::string, std::string>>& candidates) {
  std::vector<fabric::LibraryChoice> choices;
  for (const auto& [file, origin] : candidates) {
    auto named = std::find_if(std::begin(kOrigins), std::end(kOrigins),
                              [&](const auto& entry) { return origin == entry.first; });
    if (named == std::end(kOrigins)) {
      throw RmaError("rma: use_libfabric: " + origin + " is no origin of a libfabric (system, bundled, RMA_LIBFABRIC)");
    }
    choices.push_back({file, named->second});
  }
  fabric::use_library(std::move(choices));
}

std::string libfabric_path() { return fabric::library_path(); }

std::string libfabric_origin() {
  std::optional<fabric::LibraryOrigin> origin = fabric::library_origin();
  for (const auto& [name, value] : kOrigins) {
    if (origin == value) return name;
  }
  return "";
}

bool libfabric_loaded() noexcept { return fabric::library_loaded(); }

namespace {
std::vector<std::string> providers_with(uint64_t more_caps) {
  fabric::Info hints = FabricEndpoint::hints("");
  hints->caps |= more_caps;
  fi_info* found = nullptr;
  std::vector<std::string> names;
  if (fabric::getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, hints.get(), &found) != 0) return names;
  fabric::Info owner(found);
  for (fi_info* info = found; info != nullptr; info = info->next) {
    std::string name = info->fabric_attr->prov_name ? info->fabric_attr->prov_name : "";
    if (!name.empty() && std::find(names.begin(), names.end(), name) == names.end()) {
      names.push_back(name);
    }
  }
  return names;
}
}  // namespace

std::vector<std::string> usable_providers() { return providers_with(0); }

std::vector<std::string> providers_that_know_sources() {
  std::vector<std::string> names = providers_with(FI_SOURCE);
  std::erase_if(names, FabricEndpoint::provider_knows_no_sources);
  return names;
}

ProviderModes provider_modes(const std::string& provider, const std::string& node, bool sleep_fd, bool mr_strict) {
  fabric::Info found = FabricEndpoint::find(provider, node);
  // The provider fi_getinfo chose (provider "" lets it choose), as the endpoint names it.
  std::string chosen = found->fabric_attr->prov_name ? found->fabric_attr->prov_name : provider;
  uint64_t mr_mode = fabric::LocalRegistrations::mr_mode_in_force(found->domain_attr->mr_mode, mr_strict);
  return fabric::modes_in_force(found.get(), mr_mode, FabricEndpoint::completion_wait(chosen, sleep_fd));
}

}  // namespace rma
