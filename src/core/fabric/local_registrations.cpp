#include "fabric/local_registrations.hpp"

#include <rdma/fi_domain.h>
#include <rdma/fi_errno.h>

#include <sys/random.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "base/errors.hpp"
#include "fabric/check.hpp"
#include "messages/message_assembler.hpp"

namespace rma::fabric {

namespace {

// Fragment buffers per registered slab: 16 of 64 KiB, a 1 MiB registration.
constexpr size_t kBuffersPerSlab = 16;

// A 64-bit key from the kernel's random source (getrandom: never a predictable sequence, and
// no state of ours to seed).
uint64_t random_key() {
  uint64_t key = 0;
  for (size_t got = 0; got < sizeof key;) {
    ssize_t n = getrandom(reinterpret_cast<char*>(&key) + got, sizeof key - got, 0);
    if (n < 0 && errno != EINTR) throw RmaError(std::string("rma: getrandom: ") + std::strerror(errno));
    if (n > 0) got += static_cast<size_t>(n);
  }
  return key;
}

}  // namespace

MemoryRegion register_memory(const Domain& domain, const Endpoint* bind_to, uint64_t mr_mode, void* base, size_t length,
                             uint64_t access) {
  if (mr_mode & FI_MR_PROV_KEY) return MemoryRegion(domain, base, length, access, 0, bind_to);
  for (int attempt = 0;; ++attempt) {
    try {
      return MemoryRegion(domain, base, length, access, random_key(), bind_to);
    } catch (const FabricError& error) {
      if (error.code() != FI_ENOKEY || attempt == 8) throw;
    }
  }
}

LocalRegistrations::LocalRegistrations(const Domain& domain, const Endpoint* bind_to, uint64_t mr_mode, bool strict)
    : domain_(domain),
      bind_to_(bind_to),
      mr_mode_(mr_mode),
      descriptors_((mr_mode_in_force(mr_mode, strict) & FI_MR_LOCAL) != 0),
      strict_(strict) {}

LocalRegistrations::~LocalRegistrations() = default;

void LocalRegistrations::abandon_memory() {
  static std::mutex abandoned_mutex;
  static auto* abandoned = new std::vector<std::unique_ptr<std::byte[]>>();  // never destroyed
  std::lock_guard lock(mutex_);
  std::lock_guard keep(abandoned_mutex);
  for (Slab& slab : slabs_) abandoned->push_back(std::move(slab.memory));
}

LocalRegistrations::Buffer LocalRegistrations::take_fragment_buffer(size_t bytes) {
  if (!descriptors_) return {new std::byte[bytes], nullptr};
  if (bytes > kFragmentBytes) throw UsageError("rma: a buffer longer than a fragment");
  std::lock_guard lock(mutex_);
  if (free_.empty()) {
    // Registered once, for sends and receives alike.
    size_t length = kBuffersPerSlab * kFragmentBytes;
    auto memory = std::make_unique<std::byte[]>(length);
    std::byte* base = memory.get();
    auto region =
        std::make_unique<MemoryRegion>(register_memory(domain_, bind_to_, mr_mode_, base, length, FI_SEND | FI_RECV));
    enter(region->desc(), base, length);
    for (size_t i = 0; i < kBuffersPerSlab; ++i) free_.push_back({base + i * kFragmentBytes, region->desc()});
    slabs_.push_back({std::move(memory), std::move(region), reinterpret_cast<uintptr_t>(base), length});
  }
  Buffer buffer = free_.back();
  free_.pop_back();
  return buffer;
}

void LocalRegistrations::give_back(std::byte* data) noexcept {
  if (data == nullptr) return;
  if (!descriptors_) {
    delete[] data;
    return;
  }
  std::lock_guard lock(mutex_);
  for (const Slab& slab : slabs_) {  // (the one it came from, whose descriptor it takes again)
    if (reinterpret_cast<uintptr_t>(data) - slab.base < slab.length) {
      free_.push_back({data, slab.region->desc()});
      return;
    }
  }
}

std::unique_ptr<MemoryRegion> LocalRegistrations::register_for_call(void* base, size_t length, uint64_t access) {
  if (!descriptors_) return nullptr;
  auto region = std::make_unique<MemoryRegion>(register_memory(domain_, bind_to_, mr_mode_, base, length, access));
  std::lock_guard lock(mutex_);
  enter(region->desc(), base, length);
  return region;
}

void LocalRegistrations::forget(const MemoryRegion& region) noexcept {
  std::lock_guard lock(mutex_);
  ledger_.erase(region.desc());
}

void LocalRegistrations::enter(void* desc, const void* base, size_t length) {
  if (!strict_) return;
  ledger_[desc] = {reinterpret_cast<uintptr_t>(base), length};
}

void LocalRegistrations::check_ledger(const char* call, const void* base, size_t length, void* desc) const {
  std::lock_guard lock(mutex_);
  auto at = reinterpret_cast<uintptr_t>(base);
  auto found = ledger_.find(desc);
  if (found == ledger_.end()) {
    throw RmaError(std::string("rma: RMA_MR_STRICT: ") + call + " was given a " + std::to_string(length) +
                   "-byte buffer with " +
                   (desc == nullptr ? "no descriptor" : "the descriptor of no live registration"));
  }
  auto [start, size] = found->second;
  if (at < start || at - start > size || length > size - (at - start)) {
    throw RmaError(std::string("rma: RMA_MR_STRICT: ") + call + " was given a " + std::to_string(length) +
                   "-byte buffer outside the registration its descriptor names");
  }
}

}  // namespace rma::fabric
