// A same-host create() window: the target's memory belongs to another process, which the
// kernel lets us copy to and from with one process_vm_writev/readv per call: no fabric, no
// progress at the target, complete when the syscall returns. Where the kernel refuses (ptrace
// rules, a non-dumpable process) the target is reached through the fabric from then on.
#include <limits.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/errors.hpp"
#include "window/route.hpp"

namespace rma {

VmRoute::VmRoute(std::vector<int> pids, std::vector<uint64_t> bases, Routes& routes, Route& fallback, Where where)
    : Route(true, true),
      pids_(std::move(pids)),
      bases_(std::move(bases)),
      routes_(routes),
      fallback_(fallback),
      where_(std::move(where)) {}

void VmRoute::put(int target, const void* data, const Region& region) {
  if (!copy(true, target, const_cast<void*>(data), region)) fallback_.put(target, data, region);
}

void VmRoute::get(int target, void* out, const Region& region) {
  if (!copy(false, target, out, region)) fallback_.get(target, out, region);
}

void VmRoute::accumulate(const char* call, int target, ReduceOp op, ElementType type, const void* data, void* result,
                         const Region& region) {
  // Atomic with respect to the target's other accumulates only if the target applies them all.
  fallback_.accumulate(call, target, op, type, data, result, region);
}

void VmRoute::compare_and_swap(int target, ElementType type, const void* data, const void* compare, void* result,
                               const Region& region) {
  fallback_.compare_and_swap(target, type, data, compare, result, region);
}

bool VmRoute::put_direct(int target, const void* data, uint64_t offset, uint64_t bytes) {
  return copy(true, target, const_cast<void*>(data), Region::contiguous(offset, bytes, 1));
}

bool VmRoute::get_direct(int target, void* out, uint64_t offset, uint64_t bytes) {
  return copy(false, target, out, Region::contiguous(offset, bytes, 1));
}

bool VmRoute::copy(bool is_write, int target, void* local, const Region& region) {
  // One syscall for the whole region: the remote side as one iovec per run. The kernel may
  // copy less than asked (a partial copy stops at a fault): go on from where it stopped.
  std::vector<iovec> remote;
  region.for_each_run([&](uint64_t offset, uint64_t length) {
    remote.push_back({reinterpret_cast<void*>(bases_[target] + offset), static_cast<size_t>(length)});
  });
  size_t total = region.bytes(), done = 0, first = 0;
  while (done < total) {
    iovec here{static_cast<std::byte*>(local) + done, total - done};
    size_t count = std::min<size_t>(remote.size() - first, IOV_MAX);
    ssize_t moved = is_write ? process_vm_writev(pids_[target], &here, 1, remote.data() + first, count, 0)
                             : process_vm_readv(pids_[target], &here, 1, remote.data() + first, count, 0);
    if (moved <= 0) {
      if (done == 0) {
        routes_[target] = &fallback_;  // not allowed here: the fabric reaches this target from now on
        return false;
      }
      throw RmaError("rma: " + where_(is_write ? "put" : "get", target) + ": process_vm_" +
                     (is_write ? "writev" : "readv") + " stopped after " + std::to_string(done) + " of " +
                     std::to_string(total) + " bytes: " + std::strerror(errno));
    }
    done += static_cast<size_t>(moved);
    // Skip the remote iovecs the kernel filled; trim a partly filled one.
    while (moved > 0 && first < remote.size()) {
      size_t take = std::min(static_cast<size_t>(moved), remote[first].iov_len);
      remote[first].iov_base = static_cast<std::byte*>(remote[first].iov_base) + take;
      remote[first].iov_len -= take;
      moved -= static_cast<ssize_t>(take);
      if (remote[first].iov_len == 0) ++first;
    }
  }
  return true;
}

}  // namespace rma
