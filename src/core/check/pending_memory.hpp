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
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "check/access.hpp"

namespace rma::check {

using MemoryId = uint64_t;

class PendingMemory {
 public:
  // A call's array, pending from now until remove(): its bytes (addresses), the call's record,
  // and whether the call fills it (a result) or reads it (an origin). Returns its id; `conflict`
  // gets the report when it shares bytes with another pending array and one of the two is a
  // result (the first such pair).
  MemoryId add(Spans bytes, AccessRef access, bool result, std::optional<std::string>& conflict);
  // The call completed. Returns whether a touch of its array was reported already (its
  // completion then says nothing more of it).
  bool remove(MemoryId id);
  // The program read (store: changed) these bytes, at `site`: the report when they belong to a
  // pending result (or, for a change, to any pending array). Reported once per pending array.
  std::optional<std::string> touched(const Spans& bytes, bool store, const std::string& site);
  // Whether any pending array shares a byte with these.
  bool uses(const Spans& bytes) const;
  bool empty() const;

 private:
  struct Entry {
    Spans bytes;
    AccessRef access;
    bool result;
    bool reported = false;
  };
  // Calls found(id, entry) for each pending array sharing a byte with `bytes` until it returns true.
  template <class Found>
  void overlapping(const Spans& bytes, Found&& found) const;

  mutable std::mutex mutex_;
  std::map<MemoryId, Entry> entries_;
  std::multimap<uint64_t, std::pair<uint64_t, MemoryId>> starts_;  // each span: start -> (stop, id)
  uint64_t longest_ = 0;  // the longest span pending (where a search for overlaps starts)
  MemoryId next_ = 0;
};

}  // namespace rma::check
