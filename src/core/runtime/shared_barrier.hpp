// A barrier among the processes of one host, in shared memory: each rank arrives with one
// atomic add, and the last to arrive opens the next round and rings the others' bells; a waiter
// looks a few times, then sleeps on its bell. No message and no progress thread in between, so
// a barrier costs what the atomics cost, and waiting costs no CPU.
//
// It is the rule of a shared window's fence (window/shared_control.hpp) and of the barrier of
// a communicator whose members share a host (runtime/barrier_board.hpp); the words live where
// each of them keeps its shared state.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "runtime/bell.hpp"
#include "runtime/waiting.hpp"

namespace rma {

class Transport;

// The words every rank of a barrier shares: how many arrived in this round, and its number.
struct BarrierRound {
  std::atomic<uint32_t> arrived{0};
  std::atomic<uint32_t> generation{0};
};

class SharedBarrier {
 public:
  // round: shared by every rank. arrived_for[r]: rank r's word, 1 + the generation r last
  // arrived for (0: none yet). bells[r]: where rank r sleeps while it waits. rank: this rank.
  SharedBarrier(BarrierRound* round, std::vector<std::atomic<uint32_t>*> arrived_for, std::vector<Bell*> bells,
                int rank);

  int size() const noexcept { return static_cast<int>(bells_.size()); }
  // Arrives (once per round: arriving again before the round passed, after an interrupted
  // wait, counts nothing) and returns the generation to wait past.
  uint32_t arrive();
  // The generation this rank's next arrive() will be for (the round cannot pass without it).
  uint32_t upcoming() const { return round_->generation.load(std::memory_order_acquire); }
  bool passed(uint32_t generation) const;
  // The ranks that have not arrived for `generation` yet (for the messages of a long wait).
  std::vector<int> missing(uint32_t generation) const;
  // Arrives, then waits until every rank has: through transport.wait_until (PeerError when
  // one of `watch` dies, TimeoutError at the deadline, Interrupted at a SIGINT), asleep on this
  // rank's bell. what(missing ranks) names the wait in those errors.
  void pass(Transport& transport, const Deadline& deadline, std::span<const int> watch,
            const std::function<std::string(const std::vector<int>& missing)>& what);

 private:
  // Turns given away before the wait proper (which checks deadlines and peers, and sleeps):
  // enough for the other ranks of a crowded host to run once each.
  static constexpr int kYields = 100;
  BarrierRound* round_;
  std::vector<std::atomic<uint32_t>*> arrived_for_;
  std::vector<Bell*> bells_;
  int rank_;
};

}  // namespace rma
