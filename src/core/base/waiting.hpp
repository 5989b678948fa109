// Deadlines and backoff: every blocking wait in the core has a deadline, and no wait spins
// for long, because ranks routinely outnumber cores (4-8 ranks on 2 cores).
#pragma once

#include <chrono>
#include <string>

namespace rma {

using Clock = std::chrono::steady_clock;

// A point in time after which a wait gives up; "never" when the timeout is <= 0.
class Deadline {
 public:
  static Deadline after(double seconds);
  static Deadline never() { return Deadline(Clock::time_point::max(), 0); }
  bool expired() const { return Clock::now() >= at_; }
  double seconds() const { return seconds_; }  // the timeout it was made from, for messages

 private:
  Deadline(Clock::time_point at, double seconds) : at_(at), seconds_(seconds) {}
  Clock::time_point at_;
  double seconds_;
};

// The CPUs this process may run on (its affinity mask), read once.
int usable_cpus();
// The processors online on this host (whatever this process's affinity), read once.
int host_processors();

// Escalating idle strategy of a polling loop, by time since the last useful work: spin at
// first (answers arrive within microseconds while messages flow), then yield the CPU (ranks
// often outnumber cores), then sleep for doubling intervals up to a cap. reset() after work.
class Backoff {
 public:
  static constexpr int kSpinMicroseconds = 20;
  explicit Backoff(int spin_us = kSpinMicroseconds, int yield_us = 500, int max_sleep_us = 1000)
      : spin_(std::chrono::microseconds(spin_us)),
        yield_(std::chrono::microseconds(yield_us)),
        max_sleep_us_(max_sleep_us) {}
  // may_sleep=false: past the spinning, yield only.
  void idle(bool may_sleep = true);
  void reset() {
    idle_since_ = Clock::time_point{};
    sleep_us_ = kFirstSleepUs;
  }
  // Whether idle() has reached its sleeping phase (past spinning and yielding).
  bool sleeping() const { return idle_since_ != Clock::time_point{} && Clock::now() - idle_since_ >= yield_; }

 private:
  static constexpr int kFirstSleepUs = 16;
  Clock::duration spin_, yield_;
  int max_sleep_us_;
  Clock::time_point idle_since_{};
  int sleep_us_ = kFirstSleepUs;
};

}  // namespace rma
