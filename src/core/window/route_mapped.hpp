// The route to a shared window's peers (see window/route.hpp): every rank's segment is mapped
// in this process, so a call is a copy, or a plain loop under the target's accumulate lock.
#pragma once

#include <memory>
#include <vector>

#include "host/shared_segment.hpp"
#include "window/route.hpp"
#include "window/shared_control.hpp"

namespace rma {

// A shared window's peers: every segment is mapped here.
class MappedRoute final : public Route {
 public:
  // segments: every rank's, by rank (null for a rank on another host, which this route never
  // serves); control: the window's control blocks (accumulate locks).
  MappedRoute(std::vector<std::shared_ptr<SharedSegment>> segments, SharedControl& control);
  std::byte* memory(int target) const { return bases_[target]; }

  void put(int target, const void* data, const Region& region) override;
  void get(int target, void* out, const Region& region) override;
  void accumulate(const char* call, int target, ReduceOp op, ElementType type, const void* data, void* result,
                  const Region& region) override;
  void compare_and_swap(int target, ElementType type, const void* data, const void* compare, void* result,
                        const Region& region) override;
  bool put_direct(int target, const void* data, uint64_t offset, uint64_t bytes) override;
  bool get_direct(int target, void* out, uint64_t offset, uint64_t bytes) override;
  // The direct accumulate family: one admitted contiguous run at offset; element is
  // element_size(type), not 0. Inline: the direct path calls them without a virtual call.
  void accumulate_direct(int target, ReduceOp op, ElementType type, size_t element, const void* data, void* result,
                         uint64_t offset, uint64_t bytes) {
    std::byte* to = memory(target) + offset;
    control_.with_accumulate_lock(target, [&] {
      apply_reduce_plain(op, type, element, to, op == ReduceOp::NoOp ? nullptr : data, result, bytes / element);
    });
  }
  void compare_and_swap_direct(int target, ElementType type, size_t element, const void* data, const void* compare,
                               void* result, uint64_t offset) {
    std::byte* to = memory(target) + offset;
    control_.with_accumulate_lock(target, [&] { compare_and_swap_plain(type, element, to, compare, data, result); });
  }

 private:
  std::vector<std::shared_ptr<SharedSegment>> segments_;
  std::vector<std::byte*> bases_;  // segments_[rank]->data()
  SharedControl& control_;
};

}  // namespace rma
