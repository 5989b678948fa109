#include "base/trace.hpp"

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_set>
#if defined(__x86_64__)
#include <cpuid.h>
#include <x86intrin.h>
#endif

namespace rma::trace {

namespace detail {
std::atomic<bool> recording{false};

// Whether the time-stamp counter ticks at one rate in every power state and on every core
// (CPUID 0x80000007, EDX bit 8: Linux's nonstop_tsc); only then do its readings convert.
bool invariant_tsc() {
#if defined(__x86_64__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid(0x80000007, &eax, &ebx, &ecx, &edx) && (edx & (1u << 8)) != 0;
#else
  return false;
#endif
}
bool tsc = invariant_tsc();

int64_t read_tsc() noexcept {
#if defined(__x86_64__)
  return static_cast<int64_t>(__rdtsc());
#else
  return 0;
#endif
}
}  // namespace detail

namespace {

struct ClockPair {
  int64_t ticks;
  int64_t ns;
};

// Both clocks read at one moment: a tick reading between two nanosecond readings, whose middle
// it stands for. The tightest of a few tries: a rank that shares a core may be preempted
// between two readings, which would put the pair off by a time slice.
ClockPair read_clocks() {
  ClockPair best{};
  int64_t tightest = INT64_MAX;
  for (int attempt = 0; attempt < 8; ++attempt) {
    int64_t before = now_ns();
    int64_t tick = ticks();
    int64_t after = now_ns();
    if (after - before < tightest) {
      tightest = after - before;
      best = {tick, before + (after - before) / 2};
    }
  }
  return best;
}

struct Ring {
  // A spin flag rather than a mutex: held for a 64-byte copy, by the threads of one process
  // (rarely two at once), it costs a third of a mutex's lock and unlock on every record.
  std::atomic_flag busy;
  std::vector<Record> slots;
  size_t next = 0;   // where the next record goes
  size_t count = 0;  // records held (<= slots.size())
  uint64_t dropped = 0;
  ClockPair started{};  // the clocks at start(): take() converts ticks from there
};

class Held {
 public:
  explicit Held(Ring& ring) : ring_(ring) {
    while (ring_.busy.test_and_set(std::memory_order_acquire)) std::this_thread::yield();
  }
  ~Held() { ring_.busy.clear(std::memory_order_release); }
  Held(const Held&) = delete;
  Held& operator=(const Held&) = delete;

 private:
  Ring& ring_;
};

Ring& ring() {
  static auto* instance = new Ring();  // (never destroyed: threads may record during exit)
  return *instance;
}

}  // namespace

int64_t now_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

uint32_t thread_number() noexcept {
  static std::atomic<uint32_t> threads{0};
  thread_local uint32_t number = threads.fetch_add(1);
  return number;
}

const char* intern(std::string_view text) {
  static std::mutex mutex;
  static auto* texts = new std::unordered_set<std::string>();  // (nodes never move)
  std::lock_guard lock(mutex);
  return texts->emplace(text).first->c_str();
}

const char* ranks_text(const std::vector<int>& ranks) {
  std::string text;
  for (int rank : ranks) text += (text.empty() ? "" : ",") + std::to_string(rank);
  return intern(text);
}

void start(size_t capacity) {
  Ring& r = ring();
  ClockPair started = read_clocks();
  {
    Held held(r);
    r.started = started;
    r.slots.assign(capacity == 0 ? 1 : capacity, Record{});
    r.next = r.count = 0;
    r.dropped = 0;
  }
  detail::recording.store(true, std::memory_order_relaxed);
}

void stop() { detail::recording.store(false, std::memory_order_relaxed); }

void add(const Record& record) {
  Ring& r = ring();
  Held held(r);
  if (r.slots.empty()) return;  // (stopped before ever starting)
  r.slots[r.next] = record;
  if (++r.next == r.slots.size()) r.next = 0;
  if (r.count < r.slots.size()) {
    ++r.count;
  } else {
    ++r.dropped;
  }
}

Taken take() {
  Ring& r = ring();
  ClockPair now = read_clocks();
  Taken taken;
  ClockPair started;
  {
    Held held(r);
    taken = Taken{{}, r.dropped, r.slots.size()};
    taken.records.reserve(r.count);
    size_t first = (r.next + r.slots.size() - r.count) % std::max<size_t>(r.slots.size(), 1);
    for (size_t i = 0; i < r.count; ++i) taken.records.push_back(r.slots[(first + i) % r.slots.size()]);
    r.count = 0;
    r.dropped = 0;
    started = r.started;
  }
  if (detail::tsc && now.ticks > started.ticks) {
    // Every record lies between the readings at start() and now: converted along the line
    // through them, each is as exact as those two readings (a microsecond or so), however long
    // or short the recording, and whatever the counter's rate.
    double rate = static_cast<double>(now.ns - started.ns) / static_cast<double>(now.ticks - started.ticks);
    auto convert = [&](int64_t tick) {
      return started.ns + static_cast<int64_t>(static_cast<double>(tick - started.ticks) * rate);
    };
    for (Record& record : taken.records) {
      record.begin_ns = convert(record.begin_ns);
      record.end_ns = convert(record.end_ns);
    }
  }
  return taken;
}

void epoch(bool open, int64_t window, const char* kind, int target, const std::vector<int>& job_ranks) {
  if (!on()) return;
  int64_t now = ticks();
  add(Record{now, now, kind, nullptr, ranks_text(job_ranks), 0, window, target, thread_number(),
             open ? Kind::EpochOpen : Kind::EpochClose});
}

void error(const char* kind, std::string_view message) {
  if (!on()) return;
  int64_t now = ticks();
  add(Record{now, now, intern(kind), nullptr, intern(message), 0, -1, -1, thread_number(), Kind::Error});
}

WaitSpan::~WaitSpan() {
  if (ranks_ == nullptr || !on()) return;
  add(Record{begin_ns_, ticks(), "wait", nullptr, ranks_, 0, -1, -1, thread_number(), Kind::Wait});
}

}  // namespace rma::trace
