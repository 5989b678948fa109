#include "host/shm_inbox.hpp"

#include <cstring>
#include <new>

#include "host/barrier_board.hpp"

namespace rma {

namespace {
// The inbox's first cache lines: the owner's two bells, each on a line of its own. Messages ring
// one, the barriers of the owner's communicators the other, so a barrier never wakes the
// progress thread dozing on the first (a futex wake and a context switch, on every round of a
// barrier loop).
struct alignas(64) InboxHeader {
  alignas(64) Bell bell;
  alignas(64) Bell barrier_bell;
};
}  // namespace

// One ring: slots used in turn. A slot: the fragment's length (a uint32 word; 0: the slot is
// free), then from byte 8 the fragment, so that a small message is one cache line. The producer
// writes a free slot's fragment, then its length; the consumer looks at the length of the slot
// it takes next, reads the fragment, then sets the length back to 0. So each side looks only at
// the slot: a small message costs the line going to the consumer and back, where indices on
// lines of their own cost four more transfers. Each side keeps its own index (tail: the next
// slot to write; head: the next to read), on a line only it touches.
struct alignas(64) ShmInbox::Ring {
  alignas(64) uint64_t tail;
  alignas(64) uint64_t head;
};

namespace {
constexpr size_t kSlotStride = ShmInbox::kSlotBytes + 64;  // room for the length, aligned
constexpr size_t kFragmentAt = 8;                          // in a slot, after the length
constexpr size_t kRingHeaderBytes = 128;                   // sizeof(Ring)
constexpr size_t kRingBytes = kRingHeaderBytes + ShmInbox::kSlots * kSlotStride;
}  // namespace

// The segment: the header, the barrier board, then one ring per source.
size_t ShmInbox::board_at() { return sizeof(InboxHeader); }
size_t ShmInbox::rings_at(int ranks) { return (board_at() + BarrierBoard::bytes(ranks) + 63) / 64 * 64; }
size_t ShmInbox::bytes(int ranks) { return rings_at(ranks) + static_cast<size_t>(ranks) * kRingBytes; }

std::shared_ptr<ShmInbox> ShmInbox::create(int ranks) {
  // Sparse: a ring's pages are touched only when its source sends.
  auto segment = SharedSegment::create(bytes(ranks), "inbox");
  new (segment->data()) InboxHeader{};
  return std::shared_ptr<ShmInbox>(new ShmInbox(std::move(segment), ranks));
}

std::shared_ptr<ShmInbox> ShmInbox::open(const std::string& name, int ranks) {
  return std::shared_ptr<ShmInbox>(new ShmInbox(SharedSegment::open(name, bytes(ranks)), ranks));
}

Bell& ShmInbox::bell() { return reinterpret_cast<InboxHeader*>(segment_->data())->bell; }

Bell& ShmInbox::barrier_bell() { return reinterpret_cast<InboxHeader*>(segment_->data())->barrier_bell; }

std::byte* ShmInbox::board() { return segment_->data() + board_at(); }

ShmInbox::Ring& ShmInbox::ring(int source) {
  return *reinterpret_cast<Ring*>(rings_ + static_cast<size_t>(source) * kRingBytes);
}

std::byte* ShmInbox::slot(int source, uint64_t index) {
  static_assert(sizeof(Ring) == kRingHeaderBytes);
  return reinterpret_cast<std::byte*>(&ring(source)) + kRingHeaderBytes + (index % kSlots) * kSlotStride;
}

std::atomic<uint32_t>& ShmInbox::length_of(std::byte* slot) { return *reinterpret_cast<std::atomic<uint32_t>*>(slot); }

bool ShmInbox::try_push(int source, std::span<const std::byte> header, MessageParts payload) {
  Ring& r = ring(source);
  std::byte* at = slot(source, r.tail);
  std::atomic<uint32_t>& length = length_of(at);
  if (length.load(std::memory_order_acquire) != 0) return false;  // full: the consumer has not taken it yet
  std::memcpy(at + kFragmentAt, header.data(), header.size());
  payload.copy_to(at + kFragmentAt + header.size());
  length.store(static_cast<uint32_t>(header.size() + payload.size()), std::memory_order_release);  // it shows
  ++r.tail;
  return true;
}

uint64_t& ShmInbox::head_of(int source) { return ring(source).head; }

std::span<const std::byte> ShmInbox::fragment(std::byte* slot, uint32_t length) { return {slot + kFragmentAt, length}; }

}  // namespace rma
