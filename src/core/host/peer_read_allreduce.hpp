// An allreduce among the processes of one host too large for the shared exchange's cells, by
// reading each other's memory (process_vm_readv). Below kShareFrom, each rank reads every other
// rank's whole array and combines them all itself. From there on, each rank combines its share
// of the elements straight out of every rank's array, then reads the other shares of the result
// from the ranks that made them, so that each byte crosses between processes twice whatever the
// rank count. Through messages, each byte is copied into and out of an inbox at every step, and
// every step is a hop (measured on 2 cores at 4 ranks, 4 KiB: 13 us against 33 us).
//
// Rounds of the communicator's shared exchange (host/shared_exchange.hpp) order it: the
// first carries where each rank's arrays are (the note below); with shares, the next says every
// share is made; the last says that every rank has read what it needed, so no array goes away
// while another rank reads it. Where the kernel refuses a read (its ptrace rules), the rounds
// carry that too, and every rank goes on through messages alike.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "elements/reduce.hpp"
#include "host/shared_exchange.hpp"

namespace rma {

// Where a rank's arrays are, for the others to read: its process, its data, its result.
struct PeerReadNote {
  int64_t pid;
  uint64_t data;
  uint64_t result;
};

// From this size on, each rank reads shares rather than whole arrays: fewer bytes, one more
// round and twice the reads.
constexpr size_t kShareFrom = 32 * 1024;

PeerReadNote peer_read_note(std::span<const std::byte> data, std::span<std::byte> result);

// all: the first round's contributions (every size data.size(), none in its cell; each with its
// note). result: data.size() bytes, the one this rank's note named. True with the result there
// on every rank, or false on every rank alike (a read refused somewhere).
bool allreduce_by_reading(std::span<const std::byte> data, std::span<std::byte> result, ElementType type, ReduceOp op,
                          const std::vector<SharedExchange::Contribution>& all, int rank, SharedExchange& exchange,
                          const std::function<void()>& pass);

}  // namespace rma
