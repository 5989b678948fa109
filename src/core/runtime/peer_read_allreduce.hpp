// A large allreduce among the processes of one host, by reading each other's memory
// (process_vm_readv): each rank combines its share of the elements straight out of every
// rank's array, then reads the other shares of the result from the ranks that made them. Each
// byte crosses between processes twice, through the kernel, where through messages it is
// copied into and out of an inbox at every step.
//
// Three rounds of the communicator's shared exchange (runtime/shared_exchange.hpp) order it:
// the first carries where each rank's arrays are (the note below), the second says every
// share is made, the third that every rank has read what it needed, so no array goes away
// while another rank reads it. Where the kernel refuses a read (its ptrace rules), the rounds
// carry that too, and every rank goes on through messages alike.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "runtime/shared_exchange.hpp"
#include "window/reduce.hpp"

namespace rma {

// Where a rank's arrays are, for the others to read: its process, its data, its result.
struct PeerReadNote {
  int64_t pid;
  uint64_t data;
  uint64_t result;
};

// From this size on, reading is worth its three rounds (measured: below, messages are as fast
// at 4 ranks and faster at 2).
constexpr size_t kPeerReadFrom = 32 * 1024;

PeerReadNote peer_read_note(std::span<const std::byte> data, std::span<std::byte> result);

// all: the first round's contributions (every size data.size(), none in its cell; each with its
// note). result: data.size() bytes, the one this rank's note named. True with the result there
// on every rank, or false on every rank alike (a read refused somewhere).
bool allreduce_by_reading(std::span<const std::byte> data, std::span<std::byte> result, ElementType type, ReduceOp op,
                          const std::vector<SharedExchange::Contribution>& all, int rank, SharedExchange& exchange,
                          const std::function<void()>& pass);

}  // namespace rma
