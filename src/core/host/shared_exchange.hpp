// The small collectives of a communicator whose members share a host, in shared memory: every
// member writes its contribution into its cell of the communicator's barrier slot
// (host/barrier_board.hpp), passes the barrier, and reads every member's cell. One barrier
// and no message: an allgather, allreduce or alltoall of a few values costs about what a barrier
// costs, where messages cost a hop through the inboxes for each step.
//
// Each member has two cells, one per parity of the barrier's round. A member writes the other
// cell in its next collective, and writes this one again only after passing the next barrier,
// which no member passes before every member has read this round's cells.
//
// A contribution too large for its cell is announced by its size (and, if the caller gives one,
// a short note of where to find it): every member sees that, so every member goes on another
// way alike.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "host/barrier_board.hpp"
#include "host/shared_barrier.hpp"

namespace rma {

class SharedExchange {
 public:
  // The largest contribution a cell holds (its first 8 bytes hold the size).
  static constexpr size_t kFits = BarrierBoard::kCellBytes - 8;
  struct Contribution {
    uint64_t size;
    const std::byte* data;  // null: too large for the cell
    const std::byte* note;  // when too large: the note its member gave (kFits bytes)
  };

  // cells[r]: member r's two cells. rank: this member.
  SharedExchange(SharedBarrier& barrier, std::vector<std::byte*> cells, int rank)
      : barrier_(barrier), cells_(std::move(cells)), rank_(rank) {}

  // Writes `mine`, calls pass() (the communicator's barrier, with its errors), and returns
  // every member's contribution in rank order, valid until this member's next barrier.
  // `note` (at most kFits bytes) goes in the cell where `mine` does not fit.
  std::vector<Contribution> exchange(std::span<const std::byte> mine, const std::function<void()>& pass,
                                     std::span<const std::byte> note = {});
  // Whether every one fits (then the collective can be done with them).
  static bool all_fit(const std::vector<Contribution>& all);

 private:
  SharedBarrier& barrier_;
  std::vector<std::byte*> cells_;
  int rank_;
};

}  // namespace rma
