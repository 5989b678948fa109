#include "base/transport.hpp"

#include <chrono>
#include <cstdio>
#include <optional>
#include <utility>

#include "base/errors.hpp"
#include "base/interrupts.hpp"
#include "base/trace.hpp"

namespace rma {

std::string Transport::without_own_rank(std::string text) const { return without_rank_mention(std::move(text), rank_); }

void Transport::enter(std::atomic<int>& count) {
  if (count.fetch_add(1, std::memory_order_relaxed) == 0)
    callers_changed_.store(Clock::now().time_since_epoch().count(), std::memory_order_relaxed);
}

void Transport::leave(std::atomic<int>& count) {
  // (Sequentially consistent, as stand_back's flag and callers_serve_network: of this caller
  // and a sleeping engine, one sees the other.)
  if (count.fetch_sub(1) != 1) return;
  callers_changed_.store(Clock::now().time_since_epoch().count(), std::memory_order_relaxed);
  if (standing_back_.load()) release_stand_back();
}

void Transport::release_stand_back() {
  {
    // Taken and given back: an engine that saw callers before they left is asleep by now, so
    // the notice reaches it.
    std::lock_guard lock(stand_back_mutex_);
  }
  stand_back_changed_.notify_all();
}

void Transport::stand_back(std::chrono::milliseconds longest, const std::atomic<bool>& stopping) {
  std::unique_lock lock(stand_back_mutex_);
  standing_back_.store(true);
  stand_back_changed_.wait_for(lock, longest, [&] { return !callers_serve_network() || stopping.load(); });
  standing_back_.store(false);
}

void Transport::wait_until(const std::function<bool()>& done, const Deadline& deadline, std::span<const int> watch,
                           const std::function<std::string()>& what, Bell* bell, bool interruptible,
                           bool polls_itself) {
  // The waiter polls the transport itself rather than waiting for the progress thread to wake:
  // it answers fast while messages flow, and backs off to sleeping when they don't.
  Backoff backoff(static_cast<int>(wait_spin_.count()));
  // Counted while it polls the network itself: the progress engine leaves the network to it
  // meanwhile (see waiting_callers()). A wait with a bell leaves progress to the engine, unless
  // its done() polls for itself (polls_itself; see polling_callers()).
  std::optional<Counting> counted;
  if (bell == nullptr) counted.emplace(*this, waiting_callers_);
  unsigned long interrupts_before = interrupt_count();
  bool chained = false;
  // A user looking at a silent job cannot tell a slow call from a stuck one: once a wait is
  // long (its backoff sleeps), it says once what it waits for.
  std::optional<std::chrono::steady_clock::time_point> began;
  bool reported = hang_report_seconds_ <= 0;
  // done() may do what it checks for (a post that succeeds when retried): once it held, it is
  // not asked again, neither by the loop nor by a bell's sleep.
  bool finished = false;
  auto holds = [&] { return finished || (finished = done()); };
  // Asleep on the bell, a wait whose condition polls for itself across hosts stays the one
  // that serves the network: it arms the fabric's watcher itself, which rings that bell, and
  // the progress engine keeps standing back (callers_serve_network).
  bool serves_asleep = polls_itself && doze_promptly();
  trace::WaitSpan traced;  // (recorded only when the condition did not hold at once)
  if (!holds()) traced.begin(watch);
  while (!holds()) {
    // Checked on every pass, busy or not: traffic that keeps arriving (for other calls) must
    // not keep a wait for a dead peer from failing, or its deadline from passing.
    // A condition with a bell lives in shared memory: polling the fabric would only delay
    // noticing it (the progress thread serves the fabric meanwhile).
    bool busy = bell == nullptr && progress();
    // An interrupt first: when a whole job is interrupted at once (Ctrl-C, rmarun --timeout),
    // a peer that ends from its own interrupt must not turn this rank's into a PeerError.
    if (interruptible && interrupt_count() != interrupts_before)
      throw Interrupted("rma: rank " + std::to_string(rank_) + ": " + without_own_rank(what()) + " was interrupted");
    if (peers_.any_dead()) peers_.check(watch, rank_, what());  // (what() builds a string)
    if (deadline.expired()) {
      char seconds[32];
      std::snprintf(seconds, sizeof seconds, "%g", deadline.seconds());
      throw TimeoutError("rma: rank " + std::to_string(rank_) + ": " + without_own_rank(what()) +
                         " did not finish within " + seconds +
                         " s (RMA_TIMEOUT); a rank it waits for may be stuck elsewhere");
    }
    if (!reported && backoff.sleeping()) {
      auto now = std::chrono::steady_clock::now();
      if (!began) began = now;  // (the spinning before is well under a millisecond)
      if (std::chrono::duration<double>(now - *began).count() >= hang_report_seconds_) {
        std::fprintf(stderr, "rma: rank %d: still waiting in %s after %g s (RMA_HANG_REPORT; it goes on waiting)\n",
                     rank_, without_own_rank(what()).c_str(), hang_report_seconds_);
        std::fflush(stderr);
        reported = true;
      }
    }
    if (interruptible && !chained && backoff.sleeping()) {
      // A wait this long is one a user may Ctrl-C: make sure a signal.signal(SIGINT, ...)
      // since the last wait did not take our handler out of the chain (a syscall, so only once
      // the wait is long).
      chain_interrupt_handler();
      chained = true;
    }
    if (busy) {
      backoff.reset();
    } else if (bell != nullptr && backoff.sleeping()) {
      // Asleep, this caller polls nothing: the progress engine takes the network back meanwhile,
      // unless the fabric's watcher wakes this caller for it (serves_asleep).
      bool hand_back = polls_itself && !serves_asleep;
      if (hand_back) leave(polling_callers_);
      uint32_t rings = bell->rings.load();
      bell->sleep_unless(
          [&] {
            if (holds()) return true;
            // Armed once this thread counts as asleep, or its ring could be lost.
            if (serves_asleep) before_doze();
            return false;
          },
          kBellCheck);
      if (hand_back) enter(polling_callers_);
      // Woken for the network: poll actively again, as the engine does. A peer's one-sided
      // write shows this rank no completion, yet needs several passes of its progress to land
      // (tcp reads it piece by piece), and the next one is likely on its way.
      if (serves_asleep && bell->rings.load() != rings) backoff.reset();
    } else if (doze_promptly() && backoff.sleeping() && !network_in_flight()) {
      // Peers on other hosts: asleep until the fabric's wait fd says something came (a timed
      // sleep would hold up a peer's one-sided write, which needs this rank's progress). The
      // watcher is armed once this thread counts as asleep, or its ring could be lost.
      incoming_bell()->sleep_unless(
          [&] {
            if (holds()) return true;
            before_doze();
            return false;
          },
          kBellCheck);
    } else {
      // Not asleep while the network carries our own operations: the provider moves their data
      // only when polled (a sleep would stall a large transfer mid-way).
      backoff.idle(/*may_sleep=*/!network_in_flight());
    }
  }
}

}  // namespace rma
