#include "host/peer_mappings.hpp"

namespace rma {

std::shared_ptr<SharedSegment> PeerMappings::open(const std::string& name, size_t bytes) {
  std::lock_guard lock(mutex_);
  for (auto it = kept_.begin(); it != kept_.end(); ++it) {
    if ((*it)->name() == name && (*it)->bytes() == bytes) {
      kept_.splice(kept_.begin(), kept_, it);
      return kept_.front();
    }
  }
  kept_.push_front(SharedSegment::open(name, bytes));
  kept_bytes_ += bytes;
  // (The newest stays even when it alone is over the limit: its window maps it anyway.)
  while (kept_.size() > 1 && (kept_.size() > max_segments_ || kept_bytes_ > max_bytes_)) {
    kept_bytes_ -= kept_.back()->bytes();
    kept_.pop_back();
  }
  return kept_.front();
}

}  // namespace rma
