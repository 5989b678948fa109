// A rank's inbox in shared memory: one ring of message fragments per source rank of its host,
// the rank's bells, and its barrier board (host/barrier_board.hpp). Peers on the same host
// send active messages by copying fragments into the ring (single producer: the source; single
// consumer: the owner) and ringing the bell; the owner's progress takes them out and hands them
// to the message assembler like fragments that came through libfabric. No provider, no
// completion queue, no target-side copy engine: a small message costs two copies and two cache
// lines.
//
// The segment is named "<pid>-rma-inbox-<n>" (see shared_segment.hpp) and lives until the
// owner's transport closes; rmarun and rma.init remove those of killed processes.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/bell.hpp"
#include "base/message_parts.hpp"
#include "host/shared_segment.hpp"

namespace rma {

class ShmInbox {
 public:
  static constexpr size_t kSlots = 8;              // fragments in flight per source
  static constexpr size_t kSlotBytes = 64 * 1024;  // one fragment: header and payload

  // This rank's inbox, for sources [0, ranks).
  static std::shared_ptr<ShmInbox> create(int ranks);
  // A peer's inbox, by the name it published.
  static std::shared_ptr<ShmInbox> open(const std::string& name, int ranks);

  const std::string& name() const { return segment_->name(); }
  // Removes the name (the owner's, once nobody needs to open it any more); the mapping stays.
  void unlink() noexcept { segment_->unlink(); }
  int ranks() const noexcept { return ranks_; }
  // Rung after posting to this inbox.
  Bell& bell();
  // Rung when a barrier of this rank's board lets its waiters go.
  Bell& barrier_bell();
  // The memory of the rank's barrier board: BarrierBoard::bytes(ranks()), zero-filled at first.
  std::byte* board();

  // Producer (the source rank, one thread at a time): copies header and payload into the
  // ring from `source` as one fragment; false if the ring is full (nothing written).
  bool try_push(int source, std::span<const std::byte> header, MessageParts payload);
  // Consumer (the owner, one thread at a time): calls take(source, bytes) for every waiting
  // fragment, with the rank whose ring it was in (the span is valid during the call only; a
  // length word past the slot, which only a broken peer writes, is cut to the slot). Returns
  // how many it took.
  template <class Take>
  size_t drain(Take&& take) {
    size_t taken = 0;
    for (int source = 0; source < ranks_; ++source) {
      uint64_t& head = head_of(source);
      for (;; ++head, ++taken) {
        std::byte* at = slot(source, head);
        std::atomic<uint32_t>& length = length_of(at);
        uint32_t bytes = length.load(std::memory_order_acquire);
        if (bytes == 0) break;
        take(source, fragment(at, std::min<uint32_t>(bytes, kSlotBytes)));
        length.store(0, std::memory_order_release);  // the slot may be written again
      }
    }
    return taken;
  }

 private:
  struct Ring;
  ShmInbox(std::shared_ptr<SharedSegment> segment, int ranks)
      : segment_(std::move(segment)), ranks_(ranks), rings_(segment_->data() + rings_at(ranks)) {}
  static size_t bytes(int ranks);
  static size_t board_at();
  static size_t rings_at(int ranks);
  Ring& ring(int source);
  std::byte* slot(int source, uint64_t index);
  uint64_t& head_of(int source);
  static std::atomic<uint32_t>& length_of(std::byte* slot);                      // 0: free
  static std::span<const std::byte> fragment(std::byte* slot, uint32_t length);  // a written slot's bytes

  std::shared_ptr<SharedSegment> segment_;
  int ranks_;
  std::byte* rings_;  // where the first ring begins (computed once: every push and drain needs it)
};

}  // namespace rma
