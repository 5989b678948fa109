#include "fabric/fabric_modes.hpp"

#include <rdma/fi_eq.h>

#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <utility>

#include "fabric/handles.hpp"

namespace rma::fabric {

namespace {
// Our own tables rather than fi_tostr: the core reaches libfabric only through the few entry
// points libfabric_library.hpp loads, and these names are few and fixed by the ABI.
template <class Value>
struct Named {
  Value value;
  const char* name;
};

constexpr Named<uint64_t> kMrModes[] = {
    {FI_MR_LOCAL, "FI_MR_LOCAL"},           {FI_MR_RAW, "FI_MR_RAW"},           {FI_MR_VIRT_ADDR, "FI_MR_VIRT_ADDR"},
    {FI_MR_ALLOCATED, "FI_MR_ALLOCATED"},   {FI_MR_PROV_KEY, "FI_MR_PROV_KEY"}, {FI_MR_MMU_NOTIFY, "FI_MR_MMU_NOTIFY"},
    {FI_MR_RMA_EVENT, "FI_MR_RMA_EVENT"},   {FI_MR_ENDPOINT, "FI_MR_ENDPOINT"}, {FI_MR_HMEM, "FI_MR_HMEM"},
    {FI_MR_COLLECTIVE, "FI_MR_COLLECTIVE"},
};

constexpr Named<fi_progress> kProgress[] = {
    {FI_PROGRESS_UNSPEC, "FI_PROGRESS_UNSPEC"},
    {FI_PROGRESS_AUTO, "FI_PROGRESS_AUTO"},
    {FI_PROGRESS_MANUAL, "FI_PROGRESS_MANUAL"},
};

constexpr Named<fi_threading> kThreading[] = {
    {FI_THREAD_UNSPEC, "FI_THREAD_UNSPEC"},
    {FI_THREAD_SAFE, "FI_THREAD_SAFE"},
    {FI_THREAD_FID, "FI_THREAD_FID"},
    {FI_THREAD_DOMAIN, "FI_THREAD_DOMAIN"},
    {FI_THREAD_COMPLETION, "FI_THREAD_COMPLETION"},
    {FI_THREAD_ENDPOINT, "FI_THREAD_ENDPOINT"},
};

constexpr Named<fi_cq_format> kCqFormats[] = {
    {FI_CQ_FORMAT_UNSPEC, "FI_CQ_FORMAT_UNSPEC"}, {FI_CQ_FORMAT_CONTEXT, "FI_CQ_FORMAT_CONTEXT"},
    {FI_CQ_FORMAT_MSG, "FI_CQ_FORMAT_MSG"},       {FI_CQ_FORMAT_DATA, "FI_CQ_FORMAT_DATA"},
    {FI_CQ_FORMAT_TAGGED, "FI_CQ_FORMAT_TAGGED"},
};

constexpr Named<fi_wait_obj> kWaitObjects[] = {
    {FI_WAIT_NONE, "FI_WAIT_NONE"},     {FI_WAIT_UNSPEC, "FI_WAIT_UNSPEC"},         {FI_WAIT_SET, "FI_WAIT_SET"},
    {FI_WAIT_FD, "FI_WAIT_FD"},         {FI_WAIT_MUTEX_COND, "FI_WAIT_MUTEX_COND"}, {FI_WAIT_YIELD, "FI_WAIT_YIELD"},
    {FI_WAIT_POLLFD, "FI_WAIT_POLLFD"},
};

template <class Value>
std::string name_of(Value value, std::span<const Named<Value>> names) {
  for (const auto& named : names) {
    if (named.value == value) return named.name;
  }
  return std::to_string(static_cast<int64_t>(value));
}

// The bits of mr_mode joined by "|", the ones without a name as one hexadecimal number.
std::string mr_mode_names(uint64_t mode) {
  if (mode == 0) return "none";
  std::string text;
  auto add = [&](const std::string& part) { text += (text.empty() ? "" : "|") + part; };
  for (const auto& named : kMrModes) {
    if (mode & named.value) {
      add(named.name);
      mode &= ~named.value;
    }
  }
  if (mode != 0) {
    char hex[24];
    std::snprintf(hex, sizeof hex, "0x%llx", static_cast<unsigned long long>(mode));
    add(hex);
  }
  return text;
}
}  // namespace

ProviderModes modes_in_force(const fi_info* info, uint64_t mr_mode, CompletionWait wait) {
  const fi_domain_attr& domain = *info->domain_attr;
  return {
      {"provider", info->fabric_attr->prov_name ? info->fabric_attr->prov_name : ""},
      {"mr_mode", mr_mode_names(mr_mode)},
      {"data_progress", name_of<fi_progress>(domain.data_progress, kProgress)},
      {"control_progress", name_of<fi_progress>(domain.control_progress, kProgress)},
      {"threading", name_of<fi_threading>(domain.threading, kThreading)},
      {"cq_format", name_of<fi_cq_format>(kCompletionFormat, kCqFormats)},
      {"cq_wait", name_of<fi_wait_obj>(completion_wait_object(wait), kWaitObjects)},
  };
}

}  // namespace rma::fabric
