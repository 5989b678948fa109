// This rank's vector clock under RMA_CHECK: which calls of the job happened before which.
//
// Entry r counts the times world rank r made known what it had done so far ("published": at a
// barrier, a send, a fence, a post, a complete, an unlock...). Whatever a rank learns (a
// message, a barrier, the clock an unlock left at a lock's target) it merges in. An access made
// by rank p and completed at its target by p's call c (a flush, unlock, fence or complete)
// happened before another rank's access whose clock, when it was made, already held p's entry
// at or above the number of p's first publication after c: the happens-before of vector clocks,
// over RMA's completion rules.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

namespace rma::check {

// The clock as it stood at a call: shared by every access made before it moved.
using ClockStamp = std::shared_ptr<const std::vector<int64_t>>;

// One per process, shared by every window's checker and the communicator's: its calls may
// come from several threads (a window's step runs with the GIL released), so the entries are
// under a lock. A data call asks only for version(), next_publication() and take_tick(), which
// are atomics: the checker's cost on a small put is mostly such asks.
class VectorClock {
 public:
  VectorClock(int rank, int size);

  int rank() const noexcept { return rank_; }
  int size() const noexcept { return size_; }
  std::vector<int64_t> entries() const;

  // The clock as it stands: the same stamp until the clock moves.
  ClockStamp now();
  // Changes whenever the clock moves: a stamp taken at the same version is the clock as it stands.
  uint64_t version() const noexcept { return version_.load(std::memory_order_acquire); }
  // This rank's entry as its next publication will make it.
  int64_t next_publication() const noexcept { return own_.load(std::memory_order_acquire) + 1; }
  // Advances this rank's own entry; returns the clock to hand on.
  std::vector<int64_t> publish();
  // Takes in what another rank's clock knows (entries beyond this clock's size are ignored).
  void merge(std::span<const int64_t> other);
  // This rank's call count (program order: it orders the accesses of one origin), counted on.
  int64_t take_tick() noexcept { return tick_.fetch_add(1, std::memory_order_relaxed); }

 private:
  mutable std::mutex mutex_;
  int rank_;
  int size_;
  std::vector<int64_t> entries_;
  ClockStamp now_;
  std::atomic<uint64_t> version_{0};
  std::atomic<int64_t> own_{0};  // entries_[rank_]
  std::atomic<int64_t> tick_{0};
};

}  // namespace rma::check
