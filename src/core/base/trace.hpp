// The trace of a rank (RMA_TRACE): a ring of fixed-size records of its calls, waits, epochs
// and errors, which rma.trace turns into one job-wide timeline. Recording is off unless
// rma.trace.recording starts it: every place that records asks on() first, one relaxed load
// and a branch the processor predicts, so an untraced job pays nothing measurable.
//
// The ring keeps the newest records: when it is full, each new record overwrites the oldest
// and is counted as dropped, so that a long job's trace shows how it ended (and says what it
// lost). Any thread may record (trace.cpp orders them); a traced call costs ~100 ns more, two
// clock reads and the ring's copy most of it, and only a traced job pays it.
#pragma once

#include <atomic>
#include <cstdint>
#include <string_view>
#include <vector>

namespace rma::trace {

enum class Kind : uint8_t {
  Call = 0,        // a window's call: name, window, target, bytes, site
  Collective = 1,  // a communicator's call: name, communicator (object), bytes, site
  Wait = 2,        // a blocking wait inside a call: text = the job ranks it watched, "1,2"
  EpochOpen = 3,   // an epoch began on a window: name = its kind, text = its ranks, target
  EpochClose = 4,  // ... and ended (the same name, object and target)
  Error = 5,       // an exception raised to the program: name = its class, text = its message
  Message = 6,     // a communicator's point-to-point call: name, communicator, target (the peer), bytes, site
};

// A record's strings (name, site, text) live as long as the process: static names, the
// bindings' call sites (never freed), or intern()ed text.
struct Record {
  // In ticks() while in the ring; take() turns them into steady_clock nanoseconds
  // (CLOCK_MONOTONIC, the clock Python's time.monotonic_ns reads).
  int64_t begin_ns;
  int64_t end_ns;
  const char* name;
  const char* site;  // "file.py:12", or null
  const char* text;  // or null
  uint64_t bytes;
  int64_t object;   // a window's id, a communicator's context; -1: none
  int32_t target;   // a job rank; -1: none
  uint32_t thread;  // this process's threads numbered from 0 in the order they first recorded
  Kind kind;
};

namespace detail {
extern std::atomic<bool> recording;
}

inline bool on() noexcept { return detail::recording.load(std::memory_order_relaxed); }

int64_t now_ns() noexcept;

// The records' clock. A traced call reads it twice: the processor's time-stamp counter where
// it is invariant (x86-64 that says so: ~10 ns a read here, against ~25 for the vDSO's
// clock_gettime in this kind of VM), else now_ns(). take() converts ticks to now_ns()'s
// nanoseconds along the line through the two clocks' readings at start() and at take().
namespace detail {
extern bool tsc;  // set once, before the first start()
int64_t read_tsc() noexcept;
}  // namespace detail
inline int64_t ticks() noexcept { return detail::tsc ? detail::read_tsc() : now_ns(); }
uint32_t thread_number() noexcept;

// A copy of text that lives as long as the process, one per distinct text.
const char* intern(std::string_view text);

// "1,2,5": ranks as a record's text.
const char* ranks_text(const std::vector<int>& ranks);

// Clears the ring, sizes it to capacity records (at least 1) and starts recording.
void start(size_t capacity);
// Stops recording; the records stay until take() or start().
void stop();
void add(const Record& record);

struct Taken {
  std::vector<Record> records;  // oldest first
  uint64_t dropped;             // overwritten since start() (or the last take())
  size_t capacity;
};
// The records so far, oldest first; the ring is then empty (recording goes on if it was on).
Taken take();

// The shorthands the core's layers record with (each a no-op unless on()).
void epoch(bool open, int64_t window, const char* kind, int target, const std::vector<int>& job_ranks);
void error(const char* kind, std::string_view message);

// Records a wait from its construction to its destruction, if it lasts (waited()).
class WaitSpan {
 public:
  WaitSpan() = default;
  WaitSpan(const WaitSpan&) = delete;
  WaitSpan& operator=(const WaitSpan&) = delete;
  // Called once the condition first failed: the wait has begun; watched are job ranks.
  template <class Ranks>
  void begin(const Ranks& watched) {
    if (!on()) return;
    begin_ns_ = ticks();
    ranks_ = ranks_text(std::vector<int>(watched.begin(), watched.end()));
  }
  ~WaitSpan();

 private:
  int64_t begin_ns_ = 0;
  const char* ranks_ = nullptr;
};

}  // namespace rma::trace
