#include "base/bell.hpp"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <ctime>

namespace rma {

namespace {
// Shared (not FUTEX_PRIVATE) futex operations: the word is mapped by several processes.
long futex(std::atomic<uint32_t>& word, int op, uint32_t value, const timespec* timeout) {
  return syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), op, value, timeout, nullptr, 0);
}
}  // namespace

void Bell::ring() noexcept {
  // Ordered after whatever the caller changed: a sleeper announced after this load checks
  // done() after its announcement and sees the change.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (sleepers.load(std::memory_order_relaxed) == 0) return;  // the common case: a load
  rings.fetch_add(1, std::memory_order_seq_cst);
  futex(rings, FUTEX_WAKE, INT32_MAX, nullptr);
}

void Bell::sleep_unless(const std::function<bool()>& done, std::chrono::microseconds longest) noexcept {
  uint32_t seen = rings.load(std::memory_order_seq_cst);
  sleepers.fetch_add(1, std::memory_order_seq_cst);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (!done()) {
    auto seconds = std::chrono::duration_cast<std::chrono::seconds>(longest);
    timespec timeout{
        static_cast<time_t>(seconds.count()),
        static_cast<long>(std::chrono::duration_cast<std::chrono::nanoseconds>(longest - seconds).count())};
    futex(rings, FUTEX_WAIT, seen, &timeout);  // returns at once if rung since `seen`
  }
  sleepers.fetch_sub(1, std::memory_order_seq_cst);
}

}  // namespace rma
