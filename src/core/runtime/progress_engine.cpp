#include "runtime/progress_engine.hpp"

#include <cstdio>

namespace rma {

ProgressEngine::ProgressEngine(Transport& transport, int max_sleep_us)
    : transport_(transport), max_sleep_us_(max_sleep_us), thread_([this] { run(); }) {}

ProgressEngine::~ProgressEngine() { stop(); }

void ProgressEngine::stop() {
  stopping_.store(true, std::memory_order_release);
  if (Bell* bell = transport_.incoming_bell()) bell->ring();  // from a doze
  transport_.release_stand_back();
  if (thread_.joinable()) thread_.join();
}

bool ProgressEngine::progress() {
  try {
    return transport_.progress();
  } catch (const std::exception& e) {
    if (!reported_) std::fprintf(stderr, "rma: progress engine: %s\n", e.what());
    reported_ = true;
    return false;
  }
}

Clock::duration ProgressEngine::doze_after() const {
  // Promptly only while no caller waits: one that does polls the network itself (and sleeps on
  // the wait fd when its wait is long).
  bool promptly = transport_.doze_promptly() && transport_.waiting_callers() == 0;
  return promptly ? Clock::duration(kDozePromptlyAfter) : Clock::duration(kDozeAfter);
}

void ProgressEngine::run() {
  // Brief spinning: callers that wait poll for themselves; this thread is the safety net for
  // messages that arrive while the user's code runs, so it gets to sleeping quickly. Idle for
  // longer, it dozes on the transport's bell, which every peer rings after posting to us.
  Backoff backoff(/*spin_us=*/5, /*yield_us=*/50, max_sleep_us_);
  Bell* bell = transport_.incoming_bell();
  auto last_activity = Clock::now();
  while (!stopping_.load(std::memory_order_acquire)) {
    if (transport_.callers_serve_network()) {
      // A caller polls for itself: every message is its to take (see polling_callers() and
      // callers_serve_network()). Timed sleeps while calls come and go (a wake-up at each
      // call's end would cost more); once one caller has served for long (it waits), asleep
      // until the last leaves: a wake-up per millisecond would be most of that idle rank's CPU.
      if (transport_.callers_unchanged_for() < kStandBackAwake) {
        std::this_thread::sleep_for(std::chrono::microseconds(max_sleep_us_));
      } else {
        transport_.stand_back(kDozeLongest, stopping_);
      }
      backoff.reset();
      last_activity = Clock::now();
      continue;
    }
    if (progress()) {
      backoff.reset();
      last_activity = Clock::now();
    } else if (bell != nullptr && Clock::now() - last_activity >= doze_after()) {
      uint32_t rings = bell->rings.load();
      bool worked = false;
      bell->sleep_unless(
          [&] {
            if ((worked = progress()) || stopping_.load()) return true;
            // Armed only now that this thread counts as asleep: a watcher that finds work at
            // once rings before the futex wait, and a ring while nobody sleeps would be lost.
            transport_.before_doze();
            return false;
          },
          kDozeLongest);
      // Woken by a ring: poll actively again (its data may take a moment to show, over tcp).
      if (worked || bell->rings.load() != rings) {
        backoff.reset();
        last_activity = Clock::now();
      }
    } else {
      backoff.idle();
    }
  }
}

}  // namespace rma
