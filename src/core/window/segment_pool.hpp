// The memory of this host's allocate windows, kept for the next window instead of made afresh.
// Each window used to make a data segment per rank, which every peer of its host then mapped:
// shm_open, ftruncate, mmap, close, unlink and later munmap for its own, shm_open, mmap, close
// and munmap for each peer's: the largest part of creating and freeing a small window on one
// host (the control blocks are pooled the same way: ControlPool).
//
// A segment goes back to the pool only when both hold:
// - its window was freed on every rank (the window marks it reusable after free's barrier), so
//   no peer addresses it any more; a window dropped without free() never gives its memory back;
// - nothing of this process holds it any more (the window, and every NumPy array over
//   win.local), so a reused segment never shows through an old array.
// Its name stays while it is kept (it starts with the owner's pid, so a killed rank's are
// removed as its bells are), and the peers keep it mapped by name (PeerMappings): a window made
// after another of the same size on the same ranks makes no system call for its memory. Only
// small segments are pooled: a large one's page faults cost more than its system calls. Every
// segment from here has a lasting name, so that a window on one host needs no barrier before
// its names can go (Window::establish).
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "host/peer_mappings.hpp"
#include "host/shared_segment.hpp"

namespace rma {

class SegmentPool {
 public:
  SegmentPool();
  // Removes the names of every segment made here that still exists (a window never freed, or
  // memory still held, keeps its segment mapped, but its name must not outlive the job).
  ~SegmentPool();
  SegmentPool(const SegmentPool&) = delete;
  SegmentPool& operator=(const SegmentPool&) = delete;

  // A zero-filled segment of `bytes` with a lasting name: a kept one, or a new one. Those up to
  // kLargestKept bytes come back here (see above).
  std::shared_ptr<SharedSegment> take(size_t bytes);
  // A peer's segment, mapped here: kept from an earlier window when its name lasts.
  std::shared_ptr<SharedSegment> open_peer(const std::string& name, size_t bytes, bool lasting);

  static constexpr size_t kLargestKept = 1 << 20;
  static constexpr size_t kKeptPerSize = 8;
  static constexpr size_t kKeptBytes = 16 << 20;  // own segments kept, all sizes together

 private:
  struct Kept;                  // the kept segments, shared with their deleters
  std::shared_ptr<Kept> kept_;  // (a segment may be let go after this pool is gone)
  PeerMappings peers_{64, kKeptBytes};
  std::mutex made_mutex_;
  std::vector<std::weak_ptr<SharedSegment>> made_;  // lasting segments handed out, for ~SegmentPool
};

}  // namespace rma
