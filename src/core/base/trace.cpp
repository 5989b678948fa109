#include "base/trace.hpp"

#include <chrono>
#include <mutex>
#include <string>
#include <unordered_set>

namespace rma::trace {

namespace detail {
std::atomic<bool> recording{false};
}

namespace {

struct Ring {
  std::mutex mutex;
  std::vector<Record> slots;
  size_t next = 0;   // where the next record goes
  size_t count = 0;  // records held (<= slots.size())
  uint64_t dropped = 0;
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
  {
    std::lock_guard lock(r.mutex);
    r.slots.assign(capacity == 0 ? 1 : capacity, Record{});
    r.next = r.count = 0;
    r.dropped = 0;
  }
  detail::recording.store(true, std::memory_order_relaxed);
}

void stop() { detail::recording.store(false, std::memory_order_relaxed); }

void add(const Record& record) {
  Ring& r = ring();
  std::lock_guard lock(r.mutex);
  if (r.slots.empty()) return;  // (stopped before ever starting)
  r.slots[r.next] = record;
  r.next = (r.next + 1) % r.slots.size();
  if (r.count < r.slots.size()) {
    ++r.count;
  } else {
    ++r.dropped;
  }
}

Taken take() {
  Ring& r = ring();
  std::lock_guard lock(r.mutex);
  Taken taken{{}, r.dropped, r.slots.size()};
  taken.records.reserve(r.count);
  size_t first = (r.next + r.slots.size() - r.count) % std::max<size_t>(r.slots.size(), 1);
  for (size_t i = 0; i < r.count; ++i) taken.records.push_back(r.slots[(first + i) % r.slots.size()]);
  r.count = 0;
  r.dropped = 0;
  return taken;
}

void epoch(bool open, int64_t window, const char* kind, int target, const std::vector<int>& job_ranks) {
  if (!on()) return;
  int64_t now = now_ns();
  add(Record{now, now, kind, nullptr, ranks_text(job_ranks), 0, window, target, thread_number(),
             open ? Kind::EpochOpen : Kind::EpochClose});
}

void error(const char* kind, std::string_view message) {
  if (!on()) return;
  int64_t now = now_ns();
  add(Record{now, now, intern(kind), nullptr, intern(message), 0, -1, -1, thread_number(), Kind::Error});
}

WaitSpan::~WaitSpan() {
  if (ranks_ == nullptr || !on()) return;
  add(Record{begin_ns_, now_ns(), "wait", nullptr, ranks_, 0, -1, -1, thread_number(), Kind::Wait});
}

}  // namespace rma::trace
