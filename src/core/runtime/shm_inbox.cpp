#include "runtime/shm_inbox.hpp"

#include <cstring>
#include <new>

#include "runtime/barrier_board.hpp"

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

// One ring: the producer advances tail after writing a slot, the consumer advances head
// after reading one; each index on a cache line of its own. A slot: the fragment's length
// (uint32) then its bytes.
struct alignas(64) ShmInbox::Ring {
  alignas(64) std::atomic<uint64_t> tail;
  alignas(64) std::atomic<uint64_t> head;
};

namespace {
constexpr size_t kSlotStride = ShmInbox::kSlotBytes + 64;  // room for the length, aligned
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

bool ShmInbox::try_push(int source, std::span<const std::byte> header, std::span<const std::byte> payload) {
  Ring& r = ring(source);
  uint64_t tail = r.tail.load(std::memory_order_relaxed);
  if (tail - r.head.load(std::memory_order_acquire) >= kSlots) return false;  // full
  std::byte* at = slot(source, tail);
  auto length = static_cast<uint32_t>(header.size() + payload.size());
  std::memcpy(at, &length, sizeof length);
  std::memcpy(at + 64, header.data(), header.size());
  if (!payload.empty()) std::memcpy(at + 64 + header.size(), payload.data(), payload.size());
  r.tail.store(tail + 1, std::memory_order_release);  // the slot is written before it shows
  return true;
}

std::atomic<uint64_t>& ShmInbox::head_of(int source) { return ring(source).head; }
std::atomic<uint64_t>& ShmInbox::tail_of(int source) { return ring(source).tail; }

std::span<const std::byte> ShmInbox::fragment(int source, uint64_t index) {
  const std::byte* at = slot(source, index);
  uint32_t length;
  std::memcpy(&length, at, sizeof length);
  return {at + 64, length};
}

}  // namespace rma
