#include "runtime/progress_engine.hpp"

#include <cstdio>

namespace rma {

ProgressEngine::ProgressEngine(Transport& transport, int max_sleep_us)
    : transport_(transport), max_sleep_us_(max_sleep_us), thread_([this] { run(); }) {}

ProgressEngine::~ProgressEngine() { stop(); }

void ProgressEngine::stop() {
  stopping_.store(true, std::memory_order_release);
  if (thread_.joinable()) thread_.join();
}

void ProgressEngine::run() {
  // Brief spinning: callers that wait poll for themselves; this thread is the safety net for
  // messages that arrive while the user's code runs, so it gets to sleeping quickly.
  Backoff backoff(/*spin_us=*/5, /*yield_us=*/50, max_sleep_us_);
  bool reported = false;
  while (!stopping_.load(std::memory_order_acquire)) {
    bool busy = false;
    try {
      busy = transport_.progress();
    } catch (const std::exception& e) {
      if (!reported) std::fprintf(stderr, "rma: progress engine: %s\n", e.what());
      reported = true;
    }
    if (busy) {
      backoff.reset();
    } else {
      backoff.idle();
    }
  }
}

}  // namespace rma
