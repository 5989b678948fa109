// A thread that keeps the transport moving while the user's code does something else (computes,
// sleeps, holds the GIL): incoming active messages are handled without the user calling in.
// It polls with backoff and sleeps when idle; idle for longer, it dozes on the transport's bell
// (when every peer can ring it), so an idle rank costs no CPU. Callers that wait for something
// poll the transport themselves and do not depend on this thread's wake-ups; while they do
// (Transport::callers_serve_network: across hosts, any caller waiting inside rma), this thread
// sleeps, so that a peer's request is answered by the waiting thread without a hand-off.
#pragma once

#include <atomic>
#include <chrono>
#include <thread>

#include "base/transport.hpp"

namespace rma {

class ProgressEngine {
 public:
  // max_sleep_us bounds the delay between an arriving message and its handling when idle.
  ProgressEngine(Transport& transport, int max_sleep_us);
  ~ProgressEngine();  // stop()
  ProgressEngine(const ProgressEngine&) = delete;
  ProgressEngine& operator=(const ProgressEngine&) = delete;
  void stop();

 private:
  void run();
  bool progress();                     // one pass; errors are reported once, not thrown
  Clock::duration doze_after() const;  // idle this long, it dozes on the bell
  static constexpr std::chrono::milliseconds kDozeAfter{20}, kDozeLongest{100};
  // Callers serving the network, and none come or gone for this long (one waits long): the
  // engine stops its timed sleeps (stand_back).
  static constexpr std::chrono::milliseconds kStandBackAwake{20};
  // Past the spinning and yielding of its backoff (Transport::doze_promptly).
  static constexpr std::chrono::microseconds kDozePromptlyAfter{60};
  Transport& transport_;
  bool reported_ = false;
  int max_sleep_us_;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace rma
