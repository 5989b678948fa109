#include "check/vector_clock.hpp"

#include <algorithm>

#include "errors.hpp"

namespace rma::check {

VectorClock::VectorClock(int rank, int size) : rank_(rank), entries_(static_cast<size_t>(size), 0) {
  if (rank < 0 || rank >= size)
    throw RmaError("rma: RMA_CHECK: a clock of rank " + std::to_string(rank) + " of " + std::to_string(size));
}

const ClockStamp& VectorClock::now() {
  if (!now_) now_ = std::make_shared<const std::vector<int64_t>>(entries_);
  return now_;
}

void VectorClock::publish() {
  ++entries_[rank_];
  now_.reset();
}

void VectorClock::merge(std::span<const int64_t> other) {
  bool moved = false;
  size_t count = std::min(other.size(), entries_.size());
  for (size_t i = 0; i < count; ++i) {
    if (other[i] > entries_[i]) {
      entries_[i] = other[i];
      moved = true;
    }
  }
  if (moved) now_.reset();
}

}  // namespace rma::check
