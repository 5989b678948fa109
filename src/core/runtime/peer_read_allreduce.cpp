#include "runtime/peer_read_allreduce.hpp"

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
  size_t element_bytes = element_size(type);
  size_t count = data.size() / element_bytes;
  if (data.size() < kShareFrom) {
    // Small arrays: every rank reads every other's whole array and combines them all, in rank
    // order. One round and p - 1 reads, against two rounds and 2 (p - 1) reads for shares.
    bool ok = true;
    std::unique_ptr<std::byte[]> total(new std::byte[data.size()]);
    std::unique_ptr<std::byte[]> part(new std::byte[data.size()]);
    for (int r = 0; r < p && ok; ++r) {
      const std::byte* theirs = data.data();
      if (r != rank) {
        std::byte* into = r == 0 ? total.get() : part.get();
        ok = read_from(notes[r].pid, notes[r].data, into, data.size());
        theirs = into;
      }
      if (r == 0) {
        if (theirs != total.get()) std::memcpy(total.get(), theirs, data.size());
      } else {
        apply_reduce_plain(op, type, element_bytes, total.get(), theirs, nullptr, count);
      }
    }
    // (After this round nobody reads this rank's data any more: result may be data, in place.)
    if (!everyone(ok, exchange, pass)) return false;
    std::memcpy(result.data(), total.get(), data.size());
    return true;
  }
  // Rank r's share: elements [first(r), first(r + 1)).
  auto first = [&](int r) { return count * static_cast<size_t>(r) / static_cast<size_t>(p) * element_bytes; };
  size_t lo = first(rank), length = first(rank + 1) - lo;
  // This rank's share, combined in rank order (so every run gets the same bits), in `share`
  // first: result may be data itself (in place), whose share must not change before it is used.
  // (Neither is zero-filled: every byte is read into it before use.)
  bool ok = true;
  std::unique_ptr<std::byte[]> share(new std::byte[std::max<size_t>(length, 1)]);
  std::unique_ptr<std::byte[]> part(new std::byte[std::max<size_t>(length, 1)]);
  for (int r = 0; r < p && ok; ++r) {
    const std::byte* theirs = data.data() + lo;
    if (r != rank) {
      std::byte* into = r == 0 ? share.get() : part.get();
      ok = read_from(notes[r].pid, notes[r].data + lo, into, length);
      theirs = into;
    }
    if (r == 0) {
      if (theirs != share.get()) std::memcpy(share.get(), theirs, length);
    } else {
      apply_reduce_plain(op, type, element_bytes, share.get(), theirs, nullptr, length / element_bytes);
    }
  }
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
