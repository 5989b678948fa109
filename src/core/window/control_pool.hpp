// The control blocks of same-host windows (SharedControl), kept for the next window instead of
// made afresh. Making a block, and mapping every peer's, costs about ten system calls per rank
// and window (shm_open, ftruncate, mmap, close, unlink, munmap): most of what creating a small
// window on one host cost. A block goes back to its owner's pool when its window was freed on
// every rank; its name stays (it begins with the owner's pid, so the blocks of a killed rank
// are removed as its bells are), and each rank keeps the blocks of its recent peers mapped, by
// name, so that a window made right after another on the same ranks makes no system call for
// its control blocks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "host/peer_mappings.hpp"
#include "host/shared_segment.hpp"

namespace rma {

class ControlPool {
 public:
  ControlPool() = default;
  // Removes the names of every block made here that still exists (a window never freed keeps
  // its block mapped, but its name must not outlive the job in /dev/shm).
  ~ControlPool();
  ControlPool(const ControlPool&) = delete;
  ControlPool& operator=(const ControlPool&) = delete;

  // A block for a window of `ranks` ranks, reset as new: a kept one, or a new one.
  std::shared_ptr<SharedSegment> take(int ranks);
  // Keep `block` (made by take(ranks)) for a later window: only once its window was freed on
  // every rank, so that nobody touches it any more.
  void give_back(std::shared_ptr<SharedSegment> block, int ranks);
  // A peer's block of `bytes`, mapped here: kept from an earlier window, or opened now.
  std::shared_ptr<SharedSegment> open_peer(const std::string& name, size_t bytes);

 private:
  static constexpr size_t kKeptPerSize = 8;  // own blocks kept, per window size
  std::mutex mutex_;
  std::map<int, std::vector<std::shared_ptr<SharedSegment>>> kept_;  // by ranks
  std::vector<std::weak_ptr<SharedSegment>> made_;                   // every own block, for ~ControlPool
  PeerMappings peers_{64, SIZE_MAX};                                 // a block is a few KiB
};

}  // namespace rma
