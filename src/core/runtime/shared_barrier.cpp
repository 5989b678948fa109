#include "runtime/shared_barrier.hpp"

#include <sched.h>

#include "runtime/transport.hpp"

namespace rma {

namespace {
inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}
}  // namespace

SharedBarrier::SharedBarrier(BarrierRound* round, std::vector<std::atomic<uint32_t>*> arrived_for,
                             std::vector<Bell*> bells, int rank)
    : round_(round), arrived_for_(std::move(arrived_for)), bells_(std::move(bells)), rank_(rank) {}

uint32_t SharedBarrier::arrive() {
  uint32_t generation = round_->generation.load(std::memory_order_acquire);
  // A wait interrupted after arriving leaves this rank counted in the round: a second arrival
  // would let the round pass one rank short.
  std::atomic<uint32_t>& mine = *arrived_for_[rank_];
  if (mine.load(std::memory_order_relaxed) == generation + 1) return generation;
  mine.store(generation + 1, std::memory_order_relaxed);
  if (round_->arrived.fetch_add(1, std::memory_order_acq_rel) + 1 == static_cast<uint32_t>(size())) {
    // The last to arrive opens the next round and lets everyone go.
    round_->arrived.store(0, std::memory_order_relaxed);
    round_->generation.fetch_add(1, std::memory_order_seq_cst);
    for (int rank = 0; rank < size(); ++rank) {
      if (rank != rank_) bells_[rank]->ring();
    }
  }
  return generation;
}

bool SharedBarrier::passed(uint32_t generation) const {
  return round_->generation.load(std::memory_order_acquire) != generation;
}

std::vector<int> SharedBarrier::missing(uint32_t generation) const {
  // While this rank waits at `generation`, nobody can be a round ahead: a rank that did not
  // store generation + 1 has not arrived.
  std::vector<int> ranks;
  for (int rank = 0; rank < size(); ++rank) {
    if (arrived_for_[rank]->load(std::memory_order_relaxed) != generation + 1) ranks.push_back(rank);
  }
  return ranks;
}

void SharedBarrier::pass(Transport& transport, const Deadline& deadline, std::span<const int> watch,
                         const std::function<std::string(const std::vector<int>& missing)>& what) {
  uint32_t generation = arrive();
  if (size() > usable_cpus()) {
    // More ranks than cores: the ranks still missing may be waiting for this core. Spinning
    // would only keep them out (a round then costs a time slice); give the core away at once.
    for (int turn = 0; turn < kYields; ++turn) {
      if (passed(generation)) return;
      sched_yield();
    }
  } else {
    // A core each: the others are usually there within a microsecond or two; look a few
    // times before setting up a wait.
    for (int look = 0; look < 64; ++look) {
      if (passed(generation)) return;
      cpu_relax();
    }
  }
  transport.wait_until([&] { return passed(generation); }, deadline, watch, [&] { return what(missing(generation)); },
                       bells_[rank_]);
}

}  // namespace rma
