// A message's payload as two parts sent back to back, so that a call's header and the caller's
// own data leave without first being copied into one buffer (the copy into a fragment's buffer
// is the only one). A single buffer is a head with no tail.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <span>

namespace rma {

struct MessageParts {
  std::span<const std::byte> head;
  std::span<const std::byte> tail;

  size_t size() const noexcept { return head.size() + tail.size(); }
  bool empty() const noexcept { return size() == 0; }
  // The bytes [offset, offset + bytes) of head followed by tail, as parts.
  MessageParts slice(size_t offset, size_t bytes) const noexcept {
    size_t in_head = offset < head.size() ? std::min(bytes, head.size() - offset) : 0;
    size_t tail_offset = std::max(offset, head.size()) - head.size();  // (0 when it starts in head)
    return {head.subspan(std::min(offset, head.size()), in_head), tail.subspan(tail_offset, bytes - in_head)};
  }
  // Copies head then tail to `to` (size() bytes).
  void copy_to(std::byte* to) const noexcept {
    if (!head.empty()) std::memcpy(to, head.data(), head.size());
    if (!tail.empty()) std::memcpy(to + head.size(), tail.data(), tail.size());
  }
};

}  // namespace rma
