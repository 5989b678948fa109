// The lock manager of one target (window/lock_queue.hpp): grants in arrival order, never an
// exclusive lock beside another holder, and a waiting writer holds back later readers.
#include <memory>
#include <vector>

#include "check.hpp"
#include "window/lock_queue.hpp"

namespace {
using rma::LockQueue;
constexpr int kExclusive = rma::kLockExclusiveType, kShared = rma::kLockSharedType;

struct Queue {
  explicit Queue(int capacity)
      : memory(new std::byte[LockQueue::bytes(capacity)]), queue(LockQueue::make(memory.get(), capacity)) {}
  // Enqueues and returns who got a lock now.
  std::vector<int> request(int origin, int type) {
    queue->enqueue(origin, type);
    return grant();
  }
  std::vector<int> release(int origin) {
    queue->release(origin);
    return grant();
  }
  std::vector<int> grant() {
    std::vector<int> granted;
    queue->grant_waiting([&](int origin) { granted.push_back(origin); });
    return granted;
  }
  std::unique_ptr<std::byte[]> memory;
  LockQueue* queue;
};
}  // namespace

int main() {
  test::run("an exclusive lock on a free queue is granted at once", [] {
    Queue q(4);
    CHECK(q.queue->free_for(kExclusive) && q.queue->free_for(kShared));
    CHECK(q.request(1, kExclusive) == std::vector<int>{1});
    CHECK(!q.queue->free_for(kExclusive) && !q.queue->free_for(kShared));
  });

  test::run("shared locks are held together", [] {
    Queue q(4);
    CHECK(q.request(0, kShared) == std::vector<int>{0});
    CHECK(q.request(1, kShared) == std::vector<int>{1});
    CHECK(q.queue->free_for(kShared) && !q.queue->free_for(kExclusive));
  });

  test::run("no exclusive lock while a shared one is held", [] {
    Queue q(4);
    q.request(0, kShared);
    CHECK(q.request(1, kExclusive).empty());
    CHECK(q.release(0) == std::vector<int>{1});  // granted once the reader leaves
  });

  test::run("no lock of either kind while an exclusive one is held", [] {
    Queue q(4);
    q.request(0, kExclusive);
    CHECK(q.request(1, kShared).empty());
    CHECK(q.request(2, kExclusive).empty());
    CHECK(q.release(0) == std::vector<int>{1});  // in arrival order, one exclusive at a time
    CHECK(q.release(1) == std::vector<int>{2});
    CHECK(q.release(2).empty());
    CHECK(q.queue->free_for(kExclusive));
  });

  test::run("a waiting exclusive request holds back later shared ones", [] {
    Queue q(4);
    q.request(0, kShared);
    CHECK(q.request(1, kExclusive).empty());
    CHECK(q.request(2, kShared).empty());  // though compatible with the holder
    CHECK(!q.queue->free_for(kShared));    // what try_lock asks
    CHECK(q.release(0) == std::vector<int>{1});
    CHECK(q.release(1) == std::vector<int>{2});
  });

  test::run("readers queued behind a writer are granted together", [] {
    Queue q(4);
    q.request(0, kExclusive);
    q.request(1, kShared);
    q.request(2, kShared);
    q.request(3, kExclusive);
    CHECK((q.release(0) == std::vector<int>{1, 2}));
    CHECK(q.release(1).empty());
    CHECK(q.release(2) == std::vector<int>{3});
  });

  test::run("a withdrawn request is never granted", [] {
    Queue q(4);
    q.request(0, kExclusive);
    q.request(1, kExclusive);
    q.request(2, kShared);
    CHECK(q.queue->withdraw(1));
    CHECK(!q.queue->withdraw(1));  // no longer waiting
    CHECK(!q.queue->withdraw(0));  // a holder is not waiting
    CHECK(q.release(0) == std::vector<int>{2});
  });

  test::run("the ring wraps around", [] {
    Queue q(2);
    for (int round = 0; round < 5; ++round) {
      CHECK(q.request(0, kExclusive) == std::vector<int>{0});
      CHECK(q.request(1, kExclusive).empty());
      CHECK(q.release(0) == std::vector<int>{1});
      CHECK(q.release(1).empty());
    }
  });

  return test::finish();
}
