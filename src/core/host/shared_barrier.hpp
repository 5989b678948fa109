// A barrier among the processes of one host, in shared memory: each rank arrives by writing the
// number of the round into a word of its own, on a cache line of its own, and passes once every
// member's word shows that round; a waiter looks a few times, then sleeps on its bell, which
// the rank whose arrival completes the round rings. No message and no progress thread in
// between, so a barrier costs a few cache-line transfers, and waiting costs no CPU.
//
// Why a word per rank rather than one shared counter: no line is written by two ranks, so an
// arrival is a plain store that meets no contention, and a waiter learns of it with one line
// transfer. A counter's atomic add has to win the line from every rank polling it, twice a
// round (2 ranks on this machine's vCPUs, in a C test: 0.33-0.47 us a round with a counter,
// 0.14-0.17 us with a word each).
//
// It is the rule of a shared window's fence (window/shared_control.hpp) and of the barrier of
// a communicator whose members share a host (host/barrier_board.hpp); the words live where
// each of them keeps its shared state.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "base/bell.hpp"
#include "base/waiting.hpp"

namespace rma {

class Transport;

class SharedBarrier {
 public:
  // words[r]: rank r's word, the number of the last round r arrived for. They must all hold
  // the same number when the barrier is made, and only ever grow (modulo 2^32), so a rank still
  // looking at them for an earlier round is never misled. bells[r]: where rank r sleeps while
  // it waits. rank: this rank.
  SharedBarrier(std::vector<std::atomic<uint32_t>*> words, std::vector<Bell*> bells, int rank);

  int size() const noexcept { return static_cast<int>(bells_.size()); }
  // The round this rank's next arrival is for (the round cannot pass without it).
  uint32_t upcoming() const { return waiting_ ? round_ : round_ + 1; }
  // Whether every rank has arrived for `round`.
  bool passed(uint32_t round) const;
  // The ranks that have not arrived for `round` yet (for the messages of a long wait).
  std::vector<int> missing(uint32_t round) const;
  // Arrives, then waits until every rank has: through transport.wait_until (PeerError when
  // one of `watch` dies, TimeoutError at the deadline, Interrupted at a SIGINT), asleep on this
  // rank's bell. what(missing ranks) names the wait in those errors. After a wait that threw,
  // the next pass waits for the same round without arriving again: arriving twice would let a
  // round pass one rank short.
  void pass(Transport& transport, const Deadline& deadline, std::span<const int> watch,
            const std::function<std::string(const std::vector<int>& missing)>& what);

 private:
  // Turns given away before the wait proper (which checks deadlines and peers, and sleeps):
  // enough for the other ranks of a crowded host to run once each.
  static constexpr int kYields = 100;
  // Arrives (once per round) and returns the round to wait for.
  uint32_t arrive();
  std::vector<std::atomic<uint32_t>*> words_;
  std::vector<Bell*> bells_;
  int rank_;
  uint32_t round_;        // the last round this rank arrived for
  bool waiting_ = false;  // arrived for round_ and not yet seen it pass
};

// Whether a word that only grows (modulo 2^32) has reached `round`.
inline bool reached(uint32_t word, uint32_t round) { return static_cast<int32_t>(word - round) >= 0; }

}  // namespace rma
