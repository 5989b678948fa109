#include "runtime/interrupts.hpp"

#include <signal.h>

#include <atomic>

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
  struct sigaction current{};
  if (sigaction(SIGINT, nullptr, &current) != 0) return;
  if (!(current.sa_flags & SA_SIGINFO) && (current.sa_handler == SIG_IGN || current.sa_handler == SIG_DFL)) {
    return;  // nobody handles SIGINT: its default (or ignoring it) stays as it is
  }
  if ((current.sa_flags & SA_SIGINFO) && current.sa_sigaction == on_interrupt) return;  // chained already
  struct sigaction mine{};
  mine.sa_sigaction = on_interrupt;
  mine.sa_flags = SA_SIGINFO | (current.sa_flags & SA_RESTART);
  sigemptyset(&mine.sa_mask);
  previous = current;
  sigaction(SIGINT, &mine, nullptr);
}

unsigned long interrupt_count() noexcept { return interrupts.load(std::memory_order_relaxed); }

}  // namespace rma
