// A rank's board of barrier slots, in its shared-memory inbox (host/shm_inbox.hpp), which
// every rank of its host maps. The barrier of a communicator whose members all share a host
// lives in a slot of its rank 0's board (the round and every member's word of a
// host/shared_barrier.hpp barrier), so a communicator needs no shared segment of its own
// and costs nothing to make: the world's barrier is slot 0 of world rank 0's board; every other
// communicator takes a slot its rank 0 offered while it was made (Communicator::split), and
// gives it back when its rank 0 drops it.
//
// A slot also holds two cells per member for the small collectives (host/shared_exchange.hpp):
// a member writes its contribution into its cell, passes the barrier, and reads everyone's.
#pragma once

#include <atomic>
#include <bitset>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>

#include "base/bell.hpp"
#include "host/shared_barrier.hpp"

namespace rma {

class BarrierBoard {
 public:
  static constexpr int kSlots = 64;
  static constexpr int kWorldSlot = 0;
  // Bytes of one cell of a member (it has two: one per parity of the barrier's round).
  static constexpr size_t kCellBytes = 256;
  // Bytes of a board for a job of `ranks` ranks (a communicator has at most that many).
  static size_t bytes(int ranks);

  // memory: bytes(ranks) zero-filled bytes in shared memory, mapped as long as `mapping`
  // lives; bell: where the board's owner sleeps while it waits.
  BarrierBoard(std::shared_ptr<const void> mapping, std::byte* memory, int ranks, Bell* bell)
      : mapping_(std::move(mapping)), memory_(memory), ranks_(ranks), bell_(bell) {}

  Bell& bell() noexcept { return *bell_; }
  // The barrier word of the slot's member `rank` (a cache line of its own).
  std::atomic<uint32_t>* word(int slot, int rank) const noexcept {
    return reinterpret_cast<std::atomic<uint32_t>*>(at(slot) + static_cast<size_t>(rank) * kWordBytes);
  }
  // The two cells of the slot's member `rank` (2 * kCellBytes, 64-byte aligned).
  std::byte* cells(int slot, int rank) noexcept {
    return at(slot) + words_bytes(ranks_) + static_cast<size_t>(rank) * 2 * kCellBytes;
  }

  // On the owner's own board: a free slot, or -1 when every slot is taken (that communicator
  // then meets through messages). Its words all hold the same number, as a barrier needs.
  int offer();
  // Gives a slot back once its communicator of `members` ranks is gone; a slot whose round was
  // left unfinished (a rank stopped inside a barrier: the members' words differ) is never
  // handed out again.
  void release(int slot, int members);
  // Gives back a slot offered for a communicator that did not use it.
  void give_back(int slot);

 private:
  static constexpr size_t kWordBytes = 64;
  std::byte* at(int slot) const noexcept { return memory_ + static_cast<size_t>(slot) * stride(ranks_); }
  static size_t stride(int ranks);
  static size_t words_bytes(int ranks);
  std::shared_ptr<const void> mapping_;
  std::byte* memory_;
  int ranks_;
  Bell* bell_;
  std::mutex mutex_;
  std::bitset<kSlots> taken_{1u << kWorldSlot};
};

}  // namespace rma
