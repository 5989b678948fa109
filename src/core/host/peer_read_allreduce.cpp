#include "host/peer_read_allreduce.hpp"

#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <memory>

namespace rma {

namespace {

// Copies `length` bytes at `address` in process `pid` to `out`; false if the kernel refuses.
bool read_from(int64_t pid, uint64_t address, std::byte* out, size_t length) {
  size_t done = 0;
  while (done < length) {
    iovec here{out + done, length - done};
    iovec there{reinterpret_cast<void*>(address + done), length - done};
    ssize_t moved = process_vm_readv(static_cast<pid_t>(pid), &here, 1, &there, 1, 0);
    if (moved <= 0) return false;
    done += static_cast<size_t>(moved);
  }
  return true;
}

// One more round: whether every rank says `ok`.
bool everyone(bool ok, SharedExchange& exchange, const std::function<void()>& pass) {
  std::byte flag{static_cast<unsigned char>(ok)};
  auto all = exchange.exchange({&flag, 1}, pass);
  return std::all_of(all.begin(), all.end(), [](const SharedExchange::Contribution& each) {
    return each.size == 1 && each.data != nullptr && *each.data == std::byte{1};
  });
}

// Combines bytes [lo, lo + length) of every rank's data, in rank order (so every run gets the
// same bits), into `into`: this rank's own from `data`, the others' read out of their processes.
// False if the kernel refuses a read. (`into` is not data itself: result may be data, in place,
// whose bytes must not change while they are still used.)
bool combine_everyones(const std::vector<PeerReadNote>& notes, int rank, std::span<const std::byte> data, size_t lo,
                       size_t length, ElementType type, ReduceOp op, std::byte* into) {
  int p = static_cast<int>(notes.size());
  std::unique_ptr<std::byte[]> part(new std::byte[std::max<size_t>(length, 1)]);  // (read into before use)
  for (int r = 0; r < p; ++r) {
    const std::byte* theirs = data.data() + lo;
    if (r != rank) {
      std::byte* read = r == 0 ? into : part.get();
      if (!read_from(notes[r].pid, notes[r].data + lo, read, length)) return false;
      theirs = read;
    }
    if (r == 0) {
      if (theirs != into) std::memcpy(into, theirs, length);
    } else {
      size_t element_bytes = element_size(type);
      apply_reduce_plain(op, type, element_bytes, into, theirs, nullptr, length / element_bytes);
    }
  }
  return true;
}

}  // namespace

PeerReadNote peer_read_note(std::span<const std::byte> data, std::span<std::byte> result) {
  return {static_cast<int64_t>(getpid()), reinterpret_cast<uint64_t>(data.data()),
          reinterpret_cast<uint64_t>(result.data())};
}

bool allreduce_by_reading(std::span<const std::byte> data, std::span<std::byte> result, ElementType type, ReduceOp op,
                          const std::vector<SharedExchange::Contribution>& all, int rank, SharedExchange& exchange,
                          const std::function<void()>& pass) {
  int p = static_cast<int>(all.size());
  std::vector<PeerReadNote> notes(p);
  for (int r = 0; r < p; ++r) std::memcpy(&notes[r], all[r].note, sizeof(PeerReadNote));
  if (data.size() < kShareFrom) {
    // Small arrays: every rank reads every other's whole array and combines them all. One round
    // and p - 1 reads, against two rounds and 2 (p - 1) reads for shares.
    std::unique_ptr<std::byte[]> total(new std::byte[data.size()]);
    bool ok = combine_everyones(notes, rank, data, 0, data.size(), type, op, total.get());
    // (After this round nobody reads this rank's data any more: result may be data, in place.)
    if (!everyone(ok, exchange, pass)) return false;
    std::memcpy(result.data(), total.get(), data.size());
    return true;
  }
  // Rank r's share: elements [first(r), first(r + 1)).
  size_t element_bytes = element_size(type);
  size_t count = data.size() / element_bytes;
  auto first = [&](int r) { return count * static_cast<size_t>(r) / static_cast<size_t>(p) * element_bytes; };
  size_t lo = first(rank), length = first(rank + 1) - lo;
  std::unique_ptr<std::byte[]> share(new std::byte[std::max<size_t>(length, 1)]);
  bool ok = combine_everyones(notes, rank, data, lo, length, type, op, share.get());
  // (The others read this rank's data outside this share only: it can take the result now.)
  if (ok) std::memcpy(result.data() + lo, share.get(), length);
  if (!everyone(ok, exchange, pass)) return false;
  // Every share is made: read the others'.
  for (int r = 0; r < p && ok; ++r) {
    if (r == rank) continue;
    size_t their_lo = first(r);
    ok = read_from(notes[r].pid, notes[r].result + their_lo, result.data() + their_lo, first(r + 1) - their_lo);
  }
  // (After this round nobody reads this rank's arrays any more.)
  return everyone(ok, exchange, pass);
}

}  // namespace rma
