// The lock manager of one target rank's window: requests are granted in arrival order, the
// head as soon as it is compatible with the holders, so a waiting exclusive request holds back
// the shared ones behind it and a stream of readers cannot starve a writer.
//
// Plain data of fixed size with no pointers, so that it works in place in process memory
// (a libfabric window: the target's progress engine serves lock messages) and in a shared
// segment (a shared window: origins change it themselves under its spin lock).
#pragma once

#include <cstddef>
#include <cstdint>

namespace rma {

constexpr int kLockExclusiveType = 1, kLockSharedType = 2;  // rma.LOCK_EXCLUSIVE, rma.LOCK_SHARED

class LockQueue {
 public:
  // Bytes for a queue that ranks [0, capacity) may wait in (one request per rank at a time).
  static size_t bytes(int capacity);
  // Makes an empty queue in `memory` (bytes(capacity) of it, suitably aligned).
  static LockQueue* make(void* memory, int capacity);

  // Whether a request of type would be granted at once: the queue is empty and the holders
  // are compatible (what try-lock asks).
  bool free_for(int type) const;
  // Queues origin's request; false (nothing queued) when every place is taken, which only an
  // origin that asks twice without waiting for its grant does.
  bool enqueue(int origin, int type);
  // Removes origin's waiting request; false if it is not waiting (granted meanwhile).
  bool withdraw(int origin);
  // Whether any request waits; whether origin's does.
  bool any_waiting() const { return count_ > 0; }
  bool waiting(int origin) const;
  // origin stops holding its lock.
  void release(int origin);
  // Grants what can be granted now, in order, calling granted(origin) for each.
  template <class Granted>
  void grant_waiting(Granted&& granted) {
    while (count_ > 0) {
      uint32_t head = entries()[head_];
      int origin = static_cast<int>(head >> 1);
      bool exclusive = head & 1;
      if (exclusive_ != 0) return;
      if (exclusive) {
        if (shared_holders_ > 0) return;
        exclusive_ = origin + 1;
      } else {
        ++shared_holders_;
      }
      head_ = (head_ + 1) % capacity_;
      --count_;
      granted(origin);
      if (exclusive) return;
    }
  }

 private:
  uint32_t* entries() { return reinterpret_cast<uint32_t*>(this + 1); }
  const uint32_t* entries() const { return reinterpret_cast<const uint32_t*>(this + 1); }
  uint32_t capacity_;
  int32_t exclusive_;  // the exclusive holder + 1; 0: none
  int32_t shared_holders_;
  uint32_t head_, count_;
  // followed by capacity_ entries: origin << 1 | exclusive
};

}  // namespace rma
