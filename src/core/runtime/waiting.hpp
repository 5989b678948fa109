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

// Escalating idle strategy of a polling loop: spin, then yield the CPU, then sleep for
// doubling intervals up to a cap. reset() after any useful work.
class Backoff {
 public:
  explicit Backoff(int spins = 64, int yields = 64, int max_sleep_us = 1000)
      : spins_(spins), yields_(yields), max_sleep_us_(max_sleep_us) {}
  void idle();
  void reset() { round_ = 0; sleep_us_ = 16; }

 private:
  int spins_, yields_, max_sleep_us_;
  int round_ = 0;
  int sleep_us_ = 16;
};

}  // namespace rma
