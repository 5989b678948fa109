#include "host/barrier_board.hpp"

namespace rma {

size_t BarrierBoard::words_bytes(int ranks) { return static_cast<size_t>(ranks) * kWordBytes; }

size_t BarrierBoard::stride(int ranks) { return words_bytes(ranks) + static_cast<size_t>(ranks) * 2 * kCellBytes; }

size_t BarrierBoard::bytes(int ranks) { return kSlots * stride(ranks); }

int BarrierBoard::offer() {
  std::lock_guard lock(mutex_);
  for (int slot = 0; slot < kSlots; ++slot) {
    if (taken_[slot]) continue;
    taken_[slot] = true;
    // The words of an earlier communicator of fewer ranks stayed behind its own: raise them
    // all to the highest. (Words only grow, so a rank of that communicator still looking at
    // its last round is not misled.)
    uint32_t highest = word(slot, 0)->load(std::memory_order_acquire);
    for (int rank = 1; rank < ranks_; ++rank) {
      uint32_t value = word(slot, rank)->load(std::memory_order_acquire);
      if (reached(value, highest)) highest = value;
    }
    for (int rank = 0; rank < ranks_; ++rank) word(slot, rank)->store(highest, std::memory_order_release);
    return slot;
  }
  return -1;
}

void BarrierBoard::release(int slot, int members) {
  if (slot <= kWorldSlot || slot >= kSlots) return;
  uint32_t first = word(slot, 0)->load(std::memory_order_acquire);
  for (int rank = 1; rank < members; ++rank) {
    if (word(slot, rank)->load(std::memory_order_acquire) != first) return;
  }
  give_back(slot);
}

void BarrierBoard::give_back(int slot) {
  if (slot <= kWorldSlot || slot >= kSlots) return;
  std::lock_guard lock(mutex_);
  taken_[slot] = false;
}

}  // namespace rma
