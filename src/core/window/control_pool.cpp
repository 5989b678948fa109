#include "window/control_pool.hpp"

#include "window/shared_control.hpp"

namespace rma {

std::shared_ptr<SharedSegment> ControlPool::take(int ranks) {
  std::shared_ptr<SharedSegment> block;
  {
    std::lock_guard lock(mutex_);
    auto& kept = kept_[ranks];
    if (!kept.empty()) {
      block = std::move(kept.back());
      kept.pop_back();
    }
  }
  if (!block) {
    block = SharedControl::create_block(ranks);
    std::lock_guard lock(mutex_);
    std::erase_if(made_, [](const auto& made) { return made.expired(); });
    made_.push_back(block);
    return block;
  }
  SharedControl::reset_block(*block, ranks);
  return block;
}

ControlPool::~ControlPool() {
  for (auto& made : made_) {
    if (auto block = made.lock()) block->unlink();
  }
}

void ControlPool::give_back(std::shared_ptr<SharedSegment> block, int ranks) {
  std::lock_guard lock(mutex_);
  auto& kept = kept_[ranks];
  if (kept.size() < kKeptPerSize) kept.push_back(std::move(block));
}

std::shared_ptr<SharedSegment> ControlPool::open_peer(const std::string& name, size_t bytes) {
  return peers_.open(name, bytes);
}

}  // namespace rma
