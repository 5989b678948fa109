#include "window/shared_control.hpp"

#include <sched.h>

#include <cstring>
#include <new>

namespace rma {

namespace {
struct Layout {
  size_t posts, completes, grants, queue, total;
};

size_t round_up(size_t value, size_t to) { return (value + to - 1) / to * to; }

Layout layout(int ranks, size_t header) {
  Layout at{};
  size_t n = static_cast<size_t>(ranks);
  at.posts = round_up(header, 64);
  at.completes = round_up(at.posts + n * sizeof(uint64_t), 64);
  at.grants = round_up(at.completes + n * sizeof(uint64_t), 64);
  at.queue = round_up(at.grants + n * sizeof(uint32_t), 64);
  at.total = at.queue + LockQueue::bytes(ranks);
  return at;
}
}  // namespace

size_t SharedControl::bytes(int ranks) { return layout(ranks, sizeof(Header)).total; }

std::shared_ptr<SharedSegment> SharedControl::create_block(int ranks) {
  auto block = SharedSegment::create(bytes(ranks), "control");  // zero-filled: counters and words at 0
  new (block->data()) Header{};
  LockQueue::make(block->data() + layout(ranks, sizeof(Header)).queue, ranks);
  return block;
}

void SharedControl::reset_block(SharedSegment& block, int ranks) {
  std::memset(block.data(), 0, block.bytes());
  new (block.data()) Header{};
  LockQueue::make(block.data() + layout(ranks, sizeof(Header)).queue, ranks);
}

SharedControl::SharedControl(std::vector<std::shared_ptr<SharedSegment>> blocks, int rank,
                             std::function<void(const char*)> stalled)
    : blocks_(std::move(blocks)), rank_(rank), stalled_(std::move(stalled)), fence_(make_fence()) {
  Layout at = layout(size(), sizeof(Header));
  posts_at_ = at.posts;
  completes_at_ = at.completes;
  grants_at_ = at.grants;
  queue_at_ = at.queue;
}

std::optional<SharedBarrier> SharedControl::make_fence() const {
  for (const auto& block : blocks_) {
    if (!block) return std::nullopt;  // a rank on another host
  }
  std::vector<std::atomic<uint32_t>*> words;
  std::vector<Bell*> bells;
  for (int rank = 0; rank < size(); ++rank) {
    words.push_back(&header(rank).fence_word);
    bells.push_back(&header(rank).bell);
  }
  return SharedBarrier(std::move(words), std::move(bells), rank_);
}

void SharedControl::notify(std::atomic<uint64_t>* (SharedControl::*counters)(int), int receiver) {
  (this->*counters)(receiver)[rank_].fetch_add(1, std::memory_order_seq_cst);
  bell(receiver).ring();
}

void SharedControl::acquire(std::atomic<uint32_t>& spin, const char* what) {
  if (spin.exchange(1, std::memory_order_acquire) == 0) return;
  auto check_at = Clock::now() + kStallCheck;
  do {
    while (spin.load(std::memory_order_relaxed) != 0) {
      sched_yield();
      if (Clock::now() >= check_at) {
        if (stalled_) stalled_(what);
        check_at = Clock::now() + kStallCheck;
      }
    }
  } while (spin.exchange(1, std::memory_order_acquire) != 0);
}

}  // namespace rma
