// The direct path on its own: what a call to a same-host window costs when nothing about it
// needs the general path (window.cpp). A shared window's memory is mapped here: a put is a
// memmove, an accumulate a plain loop under the target's accumulate lock (shared_control.hpp).
// A create() window's memory is another process's: puts and gets are process_vm_writev/readv.
// Python's fronts call these (src/bindings/register_direct_calls.cpp), and so do the general
// calls before anything else. Anything unusual (a strided region, PROC_NULL, a post not yet
// seen, an error to raise, a kernel that refuses process_vm) returns false with nothing done
// or counted, and the general path takes the call from the start.
#include <limits.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "errors.hpp"
#include "runtime/runtime.hpp"
#include "window/window.hpp"

namespace rma {

std::byte* Window::admit_direct(int target, uint64_t offset, uint64_t bytes) {
  if (segments_.empty() || !admit_quick(target, offset, bytes)) return nullptr;
  return segments_[target]->data() + offset;
}

bool Window::admit_quick(int target, uint64_t offset, uint64_t bytes) {
  if (freed_ || target < 0 || target >= size() || bytes == 0) return false;
  if (!comm_->runtime().active()) return false;
  bool admitted = passive_access(target) || (access_open_ ? in_access_group_[target] : fence_epoch_);
  if (!admitted) return false;
  if (access_open_ && !passive_access(target) && !access_nocheck_ && !post_matched_[target]) {
    // The first call to a target of a start epoch: its post must be here already (waiting
    // for it is the general path's business, without the GIL).
    if (posts_seen_[target].load() <= posts_used_[target]) return false;
    ++posts_used_[target];
    post_matched_[target] = 1;
  }
  uint64_t length = peers_[target].length;
  if (offset > length || bytes > length - offset) return false;
  ++calls_since_sync_;
  return true;
}

bool Window::counted(bool done) {
  if (!done) --calls_since_sync_;  // admit_quick counted a call that the general path makes
  return done;
}

bool Window::put_direct(int target, const void* data, uint64_t offset, uint64_t bytes) {
  if (segments_.empty()) {
    return vm_reachable(target) && admit_quick(target, offset, bytes) &&
           counted(vm_copy(true, target, const_cast<void*>(data), Region::contiguous(offset, bytes, 1)));
  }
  std::byte* to = admit_direct(target, offset, bytes);
  if (to == nullptr) return false;
  std::memmove(to, data, bytes);  // the origin may be part of this very window
  return true;
}

bool Window::get_direct(int target, void* out, uint64_t offset, uint64_t bytes) {
  if (segments_.empty()) {
    return vm_reachable(target) && admit_quick(target, offset, bytes) &&
           counted(vm_copy(false, target, out, Region::contiguous(offset, bytes, 1)));
  }
  std::byte* from = admit_direct(target, offset, bytes);
  if (from == nullptr) return false;
  std::memmove(out, from, bytes);
  return true;
}

bool Window::get_accumulate_direct(int target, ReduceOp op, ElementType type, const void* data,
                                   void* result, uint64_t offset, uint64_t bytes) {
  size_t element = element_size(type);
  if (element == 0 || bytes % element != 0 || !op_fits(op, type)) return false;
  std::byte* to = admit_direct(target, offset, bytes);
  if (to == nullptr) return false;
  control_->with_accumulate_lock(target, [&] {
    apply_reduce_plain(op, type, element, to, op == ReduceOp::NoOp ? nullptr : data, result, bytes / element);
  });
  return true;
}

bool Window::compare_and_swap_direct(int target, ElementType type, const void* data, const void* compare,
                                     void* result, uint64_t offset) {
  size_t element = element_size(type);
  bool comparable = type != ElementType::Bytes && type != ElementType::Float32 && type != ElementType::Float64 &&
                    type != ElementType::Complex64 && type != ElementType::Complex128;
  if (!comparable) return false;
  std::byte* to = admit_direct(target, offset, element);
  if (to == nullptr) return false;
  control_->with_accumulate_lock(target, [&] { compare_and_swap_plain(type, element, to, compare, data, result); });
  return true;
}

bool Window::flush_direct(int target) {
  if ((segments_.empty() && !vm_reachable(target)) || freed_ || target < 0 || target >= size() ||
      !passive_access(target)) {
    return false;
  }
  // (A process_vm window may have fabric operations in flight if the kernel refused before.)
  if (segments_.empty() && !comm_->runtime().transport().idle(comm_->members()[target])) return false;
  if (outstanding_to_[target].load() != 0) return false;  // (shared windows are never dynamic: no refusals)
  // Direct calls completed as they were made; the fence orders them before what follows.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  return true;
}

bool Window::vm_copy(bool is_write, int target, void* local, const Region& region) {
  // One syscall for the whole region: the remote side as one iovec per run. The kernel may
  // copy less than asked (a partial copy stops at a fault): go on from where it stopped.
  std::vector<iovec> remote;
  region.for_each_run([&](uint64_t offset, uint64_t length) {
    remote.push_back({reinterpret_cast<void*>(remote_bases_[target] + offset), static_cast<size_t>(length)});
  });
  size_t total = region.bytes(), done = 0, first = 0;
  while (done < total) {
    iovec here{static_cast<std::byte*>(local) + done, total - done};
    size_t count = std::min<size_t>(remote.size() - first, IOV_MAX);
    ssize_t moved = is_write ? process_vm_writev(pids_[target], &here, 1, remote.data() + first, count, 0)
                             : process_vm_readv(pids_[target], &here, 1, remote.data() + first, count, 0);
    if (moved <= 0) {
      if (done == 0) {
        vm_ok_[target] = 0;  // not allowed here (ptrace rules, a non-dumpable process): use the fabric
        return false;
      }
      throw RmaError("rma: " + where(is_write ? "put" : "get", target) + ": process_vm_" + (is_write ? "writev" : "readv") +
                     " stopped after " + std::to_string(done) + " of " + std::to_string(total) + " bytes: " +
                     std::strerror(errno));
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
