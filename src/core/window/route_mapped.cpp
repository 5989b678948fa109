// A shared window: every rank's memory is mapped here, so a call is a copy or a loop. The
// accumulate family runs plain (vectorizable) loops under the target's accumulate lock, which
// every accumulate to that target takes, so the calls stay atomic with respect to each other
// whatever the element type or alignment.
#include <cstring>

#include "window/route_mapped.hpp"

namespace rma {

namespace {
// Applies visit(position in the local buffer, window pointer, length) to each run of region.
template <class Visit>
void each_run(const Region& region, std::byte* memory, Visit&& visit) {
  size_t cursor = 0;
  region.for_each_run([&](uint64_t offset, uint64_t length) {
    visit(cursor, memory + offset, length);
    cursor += length;
  });
}
}  // namespace

MappedRoute::MappedRoute(std::vector<std::shared_ptr<SharedSegment>> segments, SharedControl& control)
    : Route(true, true), segments_(std::move(segments)), control_(control) {
  for (const auto& segment : segments_) bases_.push_back(segment ? segment->data() : nullptr);  // (another host's)
  mapped_ = this;
}

void MappedRoute::put(int target, const void* data, const Region& region) {
  auto source = static_cast<const std::byte*>(data);
  each_run(region, memory(target), [&](size_t at, std::byte* to, uint64_t length) {
    std::memmove(to, source + at, length);  // the origin may be part of this very window
  });
}

void MappedRoute::get(int target, void* out, const Region& region) {
  auto into = static_cast<std::byte*>(out);
  each_run(region, memory(target),
           [&](size_t at, std::byte* from, uint64_t length) { std::memmove(into + at, from, length); });
}

void MappedRoute::accumulate(const char*, int target, ReduceOp op, ElementType type, const void* data, void* result,
                             const Region& region) {
  auto operand = static_cast<const std::byte*>(data);
  auto fetched = static_cast<std::byte*>(result);
  uint32_t element = region.element_size();
  control_.with_accumulate_lock(target, [&] {
    each_run(region, memory(target), [&](size_t at, std::byte* to, uint64_t length) {
      apply_reduce_plain(op, type, element, to, op == ReduceOp::NoOp ? nullptr : operand + at,
                         fetched ? fetched + at : nullptr, length / element);
    });
  });
}

void MappedRoute::compare_and_swap(int target, ElementType type, const void* data, const void* compare, void* result,
                                   const Region& region) {
  compare_and_swap_direct(target, type, region.element_size(), data, compare, result, region.offset());
}

bool MappedRoute::put_direct(int target, const void* data, uint64_t offset, uint64_t bytes) {
  std::memmove(memory(target) + offset, data, bytes);
  return true;
}

bool MappedRoute::get_direct(int target, void* out, uint64_t offset, uint64_t bytes) {
  std::memmove(out, memory(target) + offset, bytes);
  return true;
}

}  // namespace rma
