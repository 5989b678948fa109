// What one RMA call (or one load or store of window memory) touched at its target, and the
// rule that says when two accesses conflict.
//
// spec/002: it is erroneous to have concurrent conflicting accesses to the same memory location
// of a window. Two accesses to overlapping bytes conflict when at least one is a put; when a get
// meets an accumulate that updates; when two updating accumulates differ in op or in dtype, or
// overlap without matching elements (concurrent accumulates are atomic per element only with
// the same op and basic dtype: an int32 at byte 0 and one at byte 1 are not one element). Reads
// never conflict with reads: a get, or an accumulate with NO_OP (get_accumulate, fetch_and_op).
// Two accumulates of one origin to one target are ordered (MPI's default accumulate_ordering),
// so they never conflict; its other accesses conflict until a completing call orders them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "check/vector_clock.hpp"

namespace rma::check {

// The ticks and publications of an access not completed yet: later than anything.
constexpr int64_t kNotDone = int64_t{1} << 62;

enum class AccessKind : uint8_t {
  Write,       // a put, a store
  Read,        // a get, a load
  Update,      // an accumulate that changes memory
  AtomicRead,  // an accumulate with NO_OP
};

// [start, stop) bytes at the target.
struct Span {
  uint64_t start;
  uint64_t stop;
  auto operator<=>(const Span&) const = default;
};
// Sorted, disjoint, merged.
using Spans = std::vector<Span>;

// The epoch an access was made in, named only when a message needs it ("exclusive lock epoch
// 3 on rank 1"): a lock epoch that formatted its name cost more than its record.
struct Epoch {
  const std::string* kind = nullptr;  // interned: "fence", "exclusive lock", "start"...; null: before any
  int64_t number = 0;                 // the window's count of epochs at this rank
  int32_t on_rank = -1;               // a lock's target, else -1
  std::string text() const;
  bool operator==(const Epoch& other) const;
};

struct Access {
  int32_t origin = 0;       // world rank of the origin (the clock's index)
  int32_t origin_rank = 0;  // its rank in the window's communicator
  int32_t target_rank = 0;  // the target's rank in the window's communicator
  std::string call;         // "win.put", "store to win.local"...
  AccessKind kind = AccessKind::Read;
  std::string op;              // the accumulate's op ("SUM", "CAS"...), "" for put, get, load, store
  std::string dtype;           // the element type of an accumulate, "" otherwise
  uint32_t element_bytes = 0;  // the size of one of its elements (0: not an accumulate)
  Spans spans;
  ClockStamp clock;              // the origin's vector clock at the call
  int64_t tick = 0;              // the origin's call count at the call (program order)
  int64_t done_tick = kNotDone;  // its call count at the call that completed it at the target
  int64_t done = kNotDone;       // its clock entry that first made that completion known
  std::string site;              // "file.py:12"
  Epoch epoch;                   // "fence epoch 2", "exclusive lock epoch 1 on rank 0"...
  // At the origin, on its record: the publication it was last queued to be sent as completed
  // by (not sent, not compared).
  mutable int64_t queued_done = kNotDone;

  bool operator==(const Access& other) const;
};
// An origin's record of its calls (one per shape and clock: window_checker.hpp).
using AccessRef = std::shared_ptr<const Access>;

// The merged spans of the elements at `start` plus every combination of index * stride over
// `dims` (count, stride in bytes; strides may be negative).
Spans strided_spans(uint64_t start, uint64_t itemsize, std::span<const std::pair<uint64_t, int64_t>> dims);
// Sorts and merges runs of bytes into spans.
Spans merged(std::vector<Span> runs);
void merge_in_place(std::vector<Span>& runs);

// The one copy of a name the process keeps (never freed): records and their keys point to it.
const std::string& interned(std::string_view name);

// The spans' starts and stops in one list (a key of maps of accesses).
std::vector<uint64_t> bounds_of(const Spans& spans);

// The first byte range two span lists share.
std::optional<Span> overlap(const Spans& a, const Spans& b);
// Why two accesses to overlapping bytes conflict if they are concurrent; nothing if they may be.
std::optional<std::string> conflict(const Access& a, const Access& b);
// Whether `first` completed at its target before `second` was made.
bool ordered(const Access& first, const Access& second);

// An access for a message: the call, its ranks, bytes, epoch and source line.
std::string describe(const Access& access);
// The report of two conflicting accesses to `window` that nothing orders.
std::string conflict_message(const std::string& window, const Access& first, const Access& second,
                             const std::string& why);

// Accesses in a message between the ranks of one job (the same build at both ends).
void encode(std::span<const Access* const> accesses, std::vector<std::byte>& out);
std::vector<Access> decode(std::span<const std::byte> data);

}  // namespace rma::check
