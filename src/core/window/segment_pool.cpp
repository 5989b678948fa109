#include "window/segment_pool.hpp"

#include <cstring>
#include <map>
#include <mutex>
#include <vector>

namespace rma {

struct SegmentPool::Kept {
  std::mutex mutex;
  std::map<size_t, std::vector<std::unique_ptr<SharedSegment>>> by_size;
  size_t bytes = 0;

  // Takes `segment` back if it may serve again and there is room; else the caller deletes it.
  bool keep(SharedSegment* segment) {
    if (!segment->reusable()) return false;
    std::lock_guard lock(mutex);
    auto& kept = by_size[segment->bytes()];
    if (kept.size() >= kKeptPerSize || bytes + segment->bytes() > kKeptBytes) return false;
    kept.emplace_back(segment);
    bytes += segment->bytes();
    return true;
  }

  std::unique_ptr<SharedSegment> pop(size_t size) {
    std::lock_guard lock(mutex);
    auto found = by_size.find(size);
    if (found == by_size.end() || found->second.empty()) return nullptr;
    std::unique_ptr<SharedSegment> segment = std::move(found->second.back());
    found->second.pop_back();
    bytes -= size;
    return segment;
  }
};

SegmentPool::SegmentPool() : kept_(std::make_shared<Kept>()) {}

SegmentPool::~SegmentPool() {
  for (auto& made : made_) {
    if (auto segment = made.lock()) segment->unlink();
  }
}

std::shared_ptr<SharedSegment> SegmentPool::take(size_t bytes) {
  std::unique_ptr<SharedSegment> segment = bytes <= kLargestKept ? kept_->pop(bytes) : nullptr;
  if (segment) {
    std::memset(segment->data(), 0, segment->bytes());  // as new: allocate promises zeros
  } else {
    segment = SharedSegment::create_owned(bytes, "data");
  }
  // Back to the pool when the last user lets it go, if it may serve again; else unmapped and
  // unlinked as any segment. The pool's part is held weakly: it may be gone by then.
  std::weak_ptr<Kept> pool = kept_;
  std::shared_ptr<SharedSegment> handed(segment.release(), [pool](SharedSegment* gone) {
    auto kept = pool.lock();
    if (kept && gone->bytes() <= kLargestKept && kept->keep(gone)) return;
    delete gone;
  });
  std::lock_guard lock(made_mutex_);
  std::erase_if(made_, [](const auto& made) { return made.expired(); });
  made_.push_back(handed);
  return handed;
}

std::shared_ptr<SharedSegment> SegmentPool::open_peer(const std::string& name, size_t bytes, bool lasting) {
  // (A large segment is not kept: its owner will not serve it again.)
  return lasting && bytes <= kLargestKept ? peers_.open(name, bytes) : SharedSegment::open(name, bytes);
}

}  // namespace rma
