// How rma registers memory with a domain, and what FI_MR_LOCAL asks of it: that every buffer of
// ours a data-transfer call hands libfabric (a fragment sent or received, the origin of a write,
// the destination of a read) carries the descriptor of a registration that covers it, alive
// until the operation completes. Providers that drive a NIC (verbs without rxm, efa's direct
// path) need that to let the device reach the buffer; tcp and shm need nothing.
//
// Where descriptors are needed, fragments live in blocks of registered slabs (registered once,
// grown as needed): they are the bounce buffers through which every small array travels.
// The origin or destination of a one-sided write or read (large arrays, written natively) is
// registered for that one call. Elsewhere nothing is registered and no descriptor is passed.
//
// Strict mode (RMA_MR_STRICT=1, for tests) asks for descriptors from any provider, and keeps a
// ledger of the live registrations: every data-transfer call is checked, before it reaches
// libfabric, for a descriptor that is the one of a live registration covering its buffer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "fabric/handles.hpp"

namespace rma::fabric {

// Registers [base, base + length) for `access`, bound to `bind_to` where the domain asks
// (FI_MR_ENDPOINT; else nullptr). Keys: the provider's (FI_MR_PROV_KEY), else random 64-bit
// numbers, so that only the ranks told a window's key can reach its memory (a key another
// region of ours holds, -FI_ENOKEY, once in 2^64, is drawn again). Throws FabricError.
MemoryRegion register_memory(const Domain& domain, const Endpoint* bind_to, uint64_t mr_mode, void* base, size_t length,
                             uint64_t access);

class LocalRegistrations {
 public:
  // The registration modes rma keeps to: the domain's, and FI_MR_LOCAL where `strict` asks.
  static uint64_t mr_mode_in_force(uint64_t domain_mr_mode, bool strict) noexcept {
    return domain_mr_mode | (strict ? FI_MR_LOCAL : 0);
  }
  // Descriptors are needed where the mode in force has FI_MR_LOCAL.
  LocalRegistrations(const Domain& domain, const Endpoint* bind_to, uint64_t mr_mode, bool strict);
  ~LocalRegistrations();
  LocalRegistrations(const LocalRegistrations&) = delete;
  LocalRegistrations& operator=(const LocalRegistrations&) = delete;

  bool descriptors() const noexcept { return descriptors_; }
  bool strict() const noexcept { return strict_; }

  // A buffer for a fragment of `bytes` (at most kFragmentBytes) and its descriptor: a block of a
  // registered slab where descriptors are needed, else new memory of that size and nullptr.
  // Handed back with give_back. Where descriptors are needed, called under the endpoint's
  // mutex, as every call that may register or close a registration (FI_THREAD_DOMAIN).
  struct Buffer {
    std::byte* data;
    void* desc;
  };
  Buffer take_fragment_buffer(size_t bytes);
  void give_back(std::byte* data) noexcept;

  // [base, base + length) registered for one transfer (access FI_WRITE: the origin of a write;
  // FI_READ: the destination of a read), entered in the ledger until `forget`; nullptr where
  // no descriptors are needed. The caller closes it once the operation completed.
  std::unique_ptr<MemoryRegion> register_for_call(void* base, size_t length, uint64_t access);
  void forget(const MemoryRegion& region) noexcept;

  // Strict mode: throws RmaError naming `call` unless `desc` is the descriptor of a live
  // registration that covers [base, base + length). Else does nothing: inline, since every
  // send and receive asks.
  void check(const char* call, const void* base, size_t length, void* desc) const {
    if (strict_) check_ledger(call, base, length, desc);
  }

  // Keeps the fragment buffers' memory for the life of the process, past this object: sends
  // the endpoint abandoned at its close may still be read by their peers (~FabricEndpoint).
  void abandon_memory();

 private:
  void enter(void* desc, const void* base, size_t length);  // into the ledger (strict)
  void check_ledger(const char* call, const void* base, size_t length, void* desc) const;

  const Domain& domain_;
  const Endpoint* bind_to_;
  uint64_t mr_mode_;
  bool descriptors_, strict_;
  mutable std::mutex mutex_;
  struct Slab {
    std::unique_ptr<std::byte[]> memory;
    std::unique_ptr<MemoryRegion> region;
    uintptr_t base;
    size_t length;
  };
  std::vector<Slab> slabs_;
  std::vector<Buffer> free_;
  std::map<void*, std::pair<uintptr_t, size_t>> ledger_;  // desc -> (base, length), strict mode
};

}  // namespace rma::fabric
