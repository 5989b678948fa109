#include "base/interrupts.hpp"

#include <signal.h>

#include <atomic>
#include <mutex>

namespace rma {

namespace {
std::atomic<unsigned long> interrupts{0};
struct sigaction previous{};

void on_interrupt(int signal_number, siginfo_t* info, void* context) {
  interrupts.fetch_add(1, std::memory_order_relaxed);  // async-signal-safe: lock-free
  // Then whatever was there before (Python's handler, which marks the signal for Python).
  if (previous.sa_flags & SA_SIGINFO) {
    if (previous.sa_sigaction != nullptr) previous.sa_sigaction(signal_number, info, context);
  } else if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN) {
    previous.sa_handler(signal_number);
  }
}
}  // namespace

void chain_interrupt_handler() {
  // Waits on any thread may call this (Transport::wait_until); one at a time keeps `previous`
  // whole.
  static std::mutex one_at_a_time;
  std::lock_guard lock(one_at_a_time);
  struct sigaction current{};
  if (sigaction(SIGINT, nullptr, &current) != 0) return;
  bool takes_info = current.sa_flags & SA_SIGINFO;
  if (!takes_info && (current.sa_handler == SIG_IGN || current.sa_handler == SIG_DFL)) {
    return;  // nobody handles SIGINT: its default (or ignoring it) stays as it is
  }
  if (takes_info && current.sa_sigaction == on_interrupt) return;  // chained already
  static bool chained_once = false;
  if (chained_once && (takes_info || current.sa_handler != previous.sa_handler)) {
    // In front of ours is neither ours nor Python's (that signal.signal installs again): a
    // library that installed its own and calls ours in turn (libfabric's shm provider, which
    // cleans its files up, puts ours back and calls it). Chaining in front of it would make a
    // loop of the two, so leave it.
    return;
  }
  // Python's handler, on its own: in front of it goes ours. Nothing calls ours meanwhile, so
  // it never reads `previous` half set.
  struct sigaction mine{};
  mine.sa_sigaction = on_interrupt;
  mine.sa_flags = SA_SIGINFO | (current.sa_flags & SA_RESTART);
  sigemptyset(&mine.sa_mask);
  previous = current;
  chained_once = true;
  sigaction(SIGINT, &mine, nullptr);
}

unsigned long interrupt_count() noexcept { return interrupts.load(std::memory_order_relaxed); }

}  // namespace rma
