// The bytes of this process's memory that calls not completed yet still use, under RMA_CHECK:
// the origin arrays they may still read and the result arrays they may still fill, by address,
// across every window of the process.
//
// spec/002: a result array must not be read or changed, and an origin array not changed, until
// the call that uses it completed at the origin. Three ways to break that never show in a
// digest (array_watches.hpp compares one only at the completion):
// - the program reads a pending result (the bindings see the loads and stores of such an
//   array: `touched`);
// - a second call fills bytes a pending call fills or reads, or reads bytes a pending call
//   fills (two calls into one buffer: `add` reports it at the second call);
// - the program changes a pending array through a name the digest does not catch in time.
// Two calls that only read one origin array do not conflict.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "check/access.hpp"

namespace rma::check {

// A pending array's entry (reused once its call completed).
using MemoryId = uint32_t;

// Not thread-safe: its callers take turns (the bindings call it with Python's GIL held, as every
// checked call and every load of a pending array runs).
class PendingMemory {
 public:
  // A call's array, pending from now until remove(): its bytes (addresses), the call's record
  // (which its caller keeps until remove), and whether the call fills it (a result) or reads it
  // (an origin). Returns its id; `conflict` gets the report when it shares bytes with another
  // pending array and one of the two is a result (the first such pair).
  MemoryId add(std::span<const Span> bytes, const Access& access, bool result, std::optional<std::string>& conflict);
  // The call completed. Returns whether a touch of its array was reported already (its
  // completion then says nothing more of it).
  bool remove(MemoryId id);
  // The program read (store: changed) these bytes, at `site`: the report when they belong to a
  // pending result (or, for a change, to any pending array). Reported once per pending array.
  std::optional<std::string> touched(std::span<const Span> bytes, bool store, const std::string& site);
  // Whether any pending array shares a byte with these.
  bool uses(std::span<const Span> bytes) const;
  bool empty() const;

 private:
  struct Entry {
    Spans bytes;
    const Access* access = nullptr;  // null: the entry is free
    bool result = false;
    bool reported = false;
  };
  // One span of a pending array, in starts_ (sorted by start).
  struct Start {
    uint64_t start;
    uint64_t stop;
    MemoryId id;
  };
  // Calls found(id, entry) for each pending array sharing a byte with `bytes` until it returns true.
  template <class Found>
  void overlapping(std::span<const Span> bytes, Found&& found) const;

  // (Vectors, reused: a checked get or put adds and removes one array, and allocating map nodes
  // for it cost as much as the rest of the checker's record.)
  std::vector<Entry> entries_;  // by id
  std::vector<MemoryId> free_;  // ids of completed calls, for the next adds
  std::vector<Start> starts_;   // every pending span, by start
  uint64_t longest_ = 0;        // the longest span pending (where a search for overlaps starts)
};

}  // namespace rma::check
