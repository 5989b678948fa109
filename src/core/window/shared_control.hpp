// The synchronization state of a shared window, in shared memory. Each rank's block holds
// its bell (it sleeps there when it waits), the post and complete notices the others sent it,
// the lock queue of its window and the grants of that queue; rank 0's block also holds the
// fence barrier. Ranks change each other's blocks with CPU atomics and ring the bell of the
// rank that may wait for the change: no message and no progress thread in between, so the
// synchronizations of a shared window cost what the atomics cost, and waiting costs no CPU.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "base/bell.hpp"
#include "base/waiting.hpp"
#include "host/shared_barrier.hpp"
#include "host/shared_segment.hpp"
#include "window/lock_queue.hpp"

namespace rma {

class SharedControl {
 public:
  // Bytes of one rank's block for a window of `ranks` ranks.
  static size_t bytes(int ranks);
  // Creates this rank's block (shared, not yet known to the others), named after this process
  // (it may outlive its window: ControlPool).
  static std::shared_ptr<SharedSegment> create_block(int ranks);
  // Makes a block as create_block made it, for another window: only while nobody else uses it.
  static void reset_block(SharedSegment& block, int ranks);
  // blocks: every rank's block, by rank, as mapped here (null for a rank on another host: only
  // the blocks of this host's ranks are used then, and there is no fence). stalled(what) is called every few
  // milliseconds while this rank waits for one of the spin locks (for deadline and peer
  // checks: it may throw, which gives up the wait); what names the lock.
  SharedControl(std::vector<std::shared_ptr<SharedSegment>> blocks, int rank,
                std::function<void(const char* what)> stalled);

  int rank() const noexcept { return rank_; }
  int size() const noexcept { return static_cast<int>(blocks_.size()); }
  Bell& bell(int rank) { return header(rank).bell; }
  // Notices received by `rank`, counted per sender: posts (rank as origin) and completes
  // (rank as target). Each counter has one writer, the sender, and one reader.
  std::atomic<uint64_t>* posts(int rank) { return array<std::atomic<uint64_t>>(rank, posts_at_); }
  std::atomic<uint64_t>* completes(int rank) { return array<std::atomic<uint64_t>>(rank, completes_at_); }
  // Adds one notice from this rank to `receiver`'s counter and rings it.
  void notify(std::atomic<uint64_t>* (SharedControl::*counters)(int), int receiver);

  // The lock queue of target's window, and target's grant words by origin (0 waiting,
  // 1 granted, 2 refused). Change the queue only inside with_queue.
  std::atomic<uint32_t>* grants(int target) { return array<std::atomic<uint32_t>>(target, grants_at_); }
  template <class Change>
  void with_queue(int target, Change&& change) {
    std::atomic<uint32_t>& spin = header(target).queue_spin;
    acquire(spin, "the lock queue");
    try {
      change(queue(target));
    } catch (...) {
      spin.store(0, std::memory_order_release);
      throw;
    }
    spin.store(0, std::memory_order_release);
  }

  // Runs apply under target's accumulate lock: every accumulate-family call on a shared
  // window takes it, so the calls apply with plain (vectorized) loops and stay atomic with
  // respect to each other, whatever the element type or alignment.
  template <class Apply>
  void with_accumulate_lock(int target, Apply&& apply) {
    std::atomic<uint32_t>& spin = header(target).accumulate_spin;
    acquire(spin, "the accumulate lock");
    try {
      apply();
    } catch (...) {
      spin.store(0, std::memory_order_release);
      throw;
    }
    spin.store(0, std::memory_order_release);
  }

  // The fence barrier among every rank: each rank's word and bell at its own block. Only when
  // every rank's block is mapped here.
  SharedBarrier& fence() noexcept { return *fence_; }

 private:
  struct alignas(64) Header {
    Bell bell;
    // The last fence round this rank arrived for (0: none yet).
    alignas(64) std::atomic<uint32_t> fence_word;
    alignas(64) std::atomic<uint32_t> queue_spin;
    alignas(64) std::atomic<uint32_t> accumulate_spin;
  };
  // A spin lock around a few instructions (or one accumulate): yields while contended,
  // since the holder may be a process descheduled on an oversubscribed host.
  void acquire(std::atomic<uint32_t>& spin, const char* what);
  std::optional<SharedBarrier> make_fence() const;
  static constexpr std::chrono::milliseconds kStallCheck{10};
  Header& header(int rank) const { return *reinterpret_cast<Header*>(blocks_[rank]->data()); }
  template <class T>
  T* array(int rank, size_t at) const {
    return reinterpret_cast<T*>(blocks_[rank]->data() + at);
  }
  LockQueue& queue(int rank) const { return *reinterpret_cast<LockQueue*>(blocks_[rank]->data() + queue_at_); }

  std::vector<std::shared_ptr<SharedSegment>> blocks_;
  int rank_;
  std::function<void(const char*)> stalled_;
  size_t posts_at_, completes_at_, grants_at_, queue_at_;
  std::optional<SharedBarrier> fence_;
};

}  // namespace rma
