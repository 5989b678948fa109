#include "runtime/message_matcher.hpp"

namespace rma {

void MessageMatcher::deliver(uint32_t context, int source, int32_t tag, std::vector<std::byte>&& data) {
  std::lock_guard lock(mutex_);
  queues_[Key{context, source, tag}].push_back(std::move(data));
}

std::optional<std::vector<std::byte>> MessageMatcher::take(uint32_t context, int source, int32_t tag) {
  std::lock_guard lock(mutex_);
  auto queue = queues_.find(Key{context, source, tag});
  if (queue == queues_.end()) return std::nullopt;
  std::vector<std::byte> data = std::move(queue->second.front());
  queue->second.pop_front();
  if (queue->second.empty()) queues_.erase(queue);
  return data;
}

}  // namespace rma
