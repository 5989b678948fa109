// Point-to-point messages of communicators that have arrived but not yet been received,
// queued per (communicator context, source, tag) in arrival order.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <tuple>
#include <vector>

namespace rma {

class MessageMatcher {
 public:
  void deliver(uint32_t context, int source, int32_t tag, std::vector<std::byte>&& data);
  // The oldest message matching exactly, if any.
  std::optional<std::vector<std::byte>> take(uint32_t context, int source, int32_t tag);

 private:
  using Key = std::tuple<uint32_t, int, int32_t>;
  std::mutex mutex_;
  std::map<Key, std::deque<std::vector<std::byte>>> queues_;
};

}  // namespace rma
