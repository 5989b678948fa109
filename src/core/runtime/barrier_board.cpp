#include "runtime/barrier_board.hpp"

namespace rma {

namespace {
size_t round_up(size_t value, size_t to) { return (value + to - 1) / to * to; }
}  // namespace

size_t BarrierBoard::words_bytes(int ranks) {
  return round_up(static_cast<size_t>(ranks) * sizeof(std::atomic<uint32_t>), 64);
}

size_t BarrierBoard::stride(int ranks) {
  return kRoundBytes + words_bytes(ranks) + static_cast<size_t>(ranks) * 2 * kCellBytes;
}

size_t BarrierBoard::bytes(int ranks) { return kSlots * stride(ranks); }

int BarrierBoard::offer() {
  std::lock_guard lock(mutex_);
  for (int slot = 0; slot < kSlots; ++slot) {
    if (!taken_[slot]) {
      taken_[slot] = true;
      return slot;
    }
  }
  return -1;
}

void BarrierBoard::release(int slot) {
  if (slot <= kWorldSlot || slot >= kSlots) return;
  if (round(slot).arrived.load(std::memory_order_acquire) != 0) return;
  std::lock_guard lock(mutex_);
  taken_[slot] = false;
}

}  // namespace rma
