#include "window/lock_queue.hpp"

#include <new>

namespace rma {

size_t LockQueue::bytes(int capacity) { return sizeof(LockQueue) + sizeof(uint32_t) * static_cast<size_t>(capacity); }

LockQueue* LockQueue::make(void* memory, int capacity) {
  auto* queue = new (memory) LockQueue;
  queue->capacity_ = static_cast<uint32_t>(capacity);
  queue->exclusive_ = 0;
  queue->shared_holders_ = 0;
  queue->head_ = queue->count_ = 0;
  return queue;
}

bool LockQueue::free_for(int type) const {
  return count_ == 0 && exclusive_ == 0 && (type == kLockSharedType || shared_holders_ == 0);
}

bool LockQueue::enqueue(int origin, int type) {
  // One request per origin at a time, so the ring never overflows.
  if (count_ >= capacity_) return false;
  entries()[(head_ + count_) % capacity_] = static_cast<uint32_t>(origin) << 1 | (type == kLockExclusiveType ? 1u : 0u);
  ++count_;
  return true;
}

bool LockQueue::withdraw(int origin) {
  for (uint32_t i = 0; i < count_; ++i) {
    if (static_cast<int>(entries()[(head_ + i) % capacity_] >> 1) != origin) continue;
    for (uint32_t j = i; j + 1 < count_; ++j) {
      entries()[(head_ + j) % capacity_] = entries()[(head_ + j + 1) % capacity_];
    }
    --count_;
    return true;
  }
  return false;
}

bool LockQueue::waiting(int origin) const {
  for (uint32_t i = 0; i < count_; ++i) {
    if (static_cast<int>(entries()[(head_ + i) % capacity_] >> 1) == origin) return true;
  }
  return false;
}

void LockQueue::release(int origin) {
  if (exclusive_ == origin + 1) {
    exclusive_ = 0;
  } else if (shared_holders_ > 0) {
    --shared_holders_;
  }
}

}  // namespace rma
