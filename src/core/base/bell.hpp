// A bell in shared memory: a waiter sleeps on it (futex) and whoever makes the waiter's
// condition true rings it. Processes of one host wake each other this way without a thread
// polling for them, so a rank waiting on a shared-memory condition uses no CPU.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>

namespace rma {

struct Bell {
  std::atomic<uint32_t> rings{0};
  std::atomic<uint32_t> sleepers{0};

  // After changing what a waiter waits for: wakes it if it sleeps (a syscall only then).
  void ring() noexcept;
  // Sleeps until rung or for at most `longest`, unless done() holds once this waiter is
  // announced (so a ring between the caller's last check and the sleep is never lost).
  void sleep_unless(const std::function<bool()>& done, std::chrono::microseconds longest) noexcept;
};

static_assert(std::atomic<uint32_t>::is_always_lock_free, "a futex word must be a plain 32-bit word");

}  // namespace rma
