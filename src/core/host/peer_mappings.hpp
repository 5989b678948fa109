// Other ranks' shared segments of this host, kept mapped by name for the next window that names
// them again: mapping a peer's segment costs shm_open, mmap, close and later munmap, which is a
// large part of creating a small window. Only segments whose names outlive their window are
// kept (a pooled control block or data segment: their owner serves them again under the same
// name); the least recently used one is unmapped once there are too many, or too many bytes.
#pragma once

#include <cstddef>
#include <list>
#include <memory>
#include <mutex>
#include <string>

#include "host/shared_segment.hpp"

namespace rma {

class PeerMappings {
 public:
  PeerMappings(size_t max_segments, size_t max_bytes) : max_segments_(max_segments), max_bytes_(max_bytes) {}
  PeerMappings(const PeerMappings&) = delete;
  PeerMappings& operator=(const PeerMappings&) = delete;

  // The peer's segment `name` of `bytes`, mapped here: kept from an earlier window, or opened now.
  std::shared_ptr<SharedSegment> open(const std::string& name, size_t bytes);

 private:
  const size_t max_segments_, max_bytes_;
  std::mutex mutex_;
  std::list<std::shared_ptr<SharedSegment>> kept_;  // most recently used first
  size_t kept_bytes_ = 0;
};

}  // namespace rma
