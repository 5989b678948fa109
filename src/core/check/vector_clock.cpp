#include "check/vector_clock.hpp"

#include <algorithm>

#include "base/errors.hpp"

namespace rma::check {

VectorClock::VectorClock(int rank, int size) : rank_(rank), size_(size), entries_(static_cast<size_t>(size), 0) {
  if (rank < 0 || rank >= size) {
    throw RmaError("rma: RMA_CHECK: a clock of rank " + std::to_string(rank) + " of " + std::to_string(size));
  }
}

std::vector<int64_t> VectorClock::entries() const {
  std::lock_guard lock(mutex_);
  return entries_;
}

ClockStamp VectorClock::now() {
  std::lock_guard lock(mutex_);
  if (!now_) now_ = std::make_shared<const std::vector<int64_t>>(entries_);
  return now_;
}

std::vector<int64_t> VectorClock::publish() {
  std::lock_guard lock(mutex_);
  own_.store(++entries_[rank_], std::memory_order_release);
  now_.reset();
  version_.fetch_add(1, std::memory_order_release);
  return entries_;
}

void VectorClock::merge(std::span<const int64_t> other) {
  std::lock_guard lock(mutex_);
  bool moved = false;
  size_t count = std::min(other.size(), entries_.size());
  for (size_t i = 0; i < count; ++i) {
    if (other[i] > entries_[i]) {
      entries_[i] = other[i];
      moved = true;
    }
  }
  if (moved) {
    own_.store(entries_[rank_], std::memory_order_release);
    now_.reset();
    version_.fetch_add(1, std::memory_order_release);
  }
}

}  // namespace rma::check
