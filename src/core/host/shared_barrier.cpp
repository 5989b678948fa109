#include "host/shared_barrier.hpp"

#include <sched.h>

#include "base/transport.hpp"

namespace rma {

namespace {
inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}
}  // namespace

SharedBarrier::SharedBarrier(std::vector<std::atomic<uint32_t>*> words, std::vector<Bell*> bells, int rank)
    : words_(std::move(words)),
      bells_(std::move(bells)),
      rank_(rank),
      round_(words_[rank_]->load(std::memory_order_acquire)) {}

uint32_t SharedBarrier::arrive() {
  if (waiting_) return round_;
  ++round_;
  waiting_ = true;
  // Sequentially consistent, as the others' arrivals are: of two ranks arriving at once, at
  // least one sees the other's word, so the round's last arrival always sees it complete and
  // rings the sleepers.
  words_[rank_]->store(round_, std::memory_order_seq_cst);
  if (passed(round_)) {
    for (int rank = 0; rank < size(); ++rank) {
      if (rank != rank_) bells_[rank]->ring();
    }
  }
  return round_;
}

bool SharedBarrier::passed(uint32_t round) const {
  for (auto* word : words_) {
    if (!reached(word->load(std::memory_order_acquire), round)) return false;
  }
  return true;
}

std::vector<int> SharedBarrier::missing(uint32_t round) const {
  std::vector<int> ranks;
  for (int rank = 0; rank < size(); ++rank) {
    if (!reached(words_[rank]->load(std::memory_order_relaxed), round)) ranks.push_back(rank);
  }
  return ranks;
}

void SharedBarrier::pass(Transport& transport, const Deadline& deadline, std::span<const int> watch,
                         const std::function<std::string(const std::vector<int>& missing)>& what) {
  uint32_t round = arrive();
  auto done = [&] {
    if (!passed(round)) return false;
    waiting_ = false;
    return true;
  };
  if (size() > usable_cpus()) {
    // More ranks than cores: the ranks still missing may be waiting for this core. Spinning
    // would only keep them out (a round then costs a time slice); give the core away at once.
    for (int turn = 0; turn < kYields; ++turn) {
      if (done()) return;
      sched_yield();
    }
  } else {
    // A core each: the others are usually there within a microsecond or two; look a few
    // times before setting up a wait.
    for (int look = 0; look < 64; ++look) {
      if (done()) return;
      cpu_relax();
    }
  }
  transport.wait_until(done, deadline, watch, [&] { return what(missing(round)); }, bells_[rank_]);
}

}  // namespace rma
