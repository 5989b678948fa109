#include "base/waiting.hpp"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <thread>

namespace rma {

int usable_cpus() {
  static const int cpus = [] {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0) return 1;
    return std::max(1, CPU_COUNT(&set));
  }();
  return cpus;
}

int host_processors() {
  static const int processors = [] {
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    return online > 0 ? static_cast<int>(online) : usable_cpus();
  }();
  return processors;
}

Deadline Deadline::after(double seconds) {
  if (seconds <= 0) return never();
  auto span = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  return Deadline(Clock::now() + span, seconds);
}

void Backoff::idle(bool may_sleep) {
  auto now = Clock::now();
  if (idle_since_ == Clock::time_point{}) idle_since_ = now;
  auto idle = now - idle_since_;
  if (idle < spin_) return;
  if (idle < yield_ || !may_sleep) {
    sched_yield();
    return;
  }
  std::this_thread::sleep_for(std::chrono::microseconds(sleep_us_));
  sleep_us_ = std::min(sleep_us_ * 2, max_sleep_us_);
}

}  // namespace rma
