// The epoch methods: check with the epochs (window/epochs.hpp), complete what the ending
// epoch's calls left in flight, synchronize (window/sync_strategy.hpp), then tell the epochs.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <optional>

#include "base/errors.hpp"
#include "base/trace.hpp"
#include "runtime/runtime.hpp"
#include "window/route_fabric.hpp"
#include "window/sync_strategy.hpp"
#include "window/window.hpp"

namespace rma {

// ---- the trace's epoch spans ----

namespace {
// A lock epoch's kind in the trace, by the lock's type.
const char* lock_epoch_kind(int type) { return type == kLockExclusive ? "lock exclusive" : "lock shared"; }
}  // namespace

void Window::trace_epoch(bool open, const char* kind, int target, const std::vector<int>& group) const {
  if (!trace::on()) return;
  const std::vector<int>& members = comm_->members();
  std::vector<int> job_ranks;
  if (target >= 0) job_ranks.push_back(members[target]);
  for (int rank : group) job_ranks.push_back(members[rank]);
  trace::epoch(open, id_, kind, target >= 0 ? members[target] : -1, job_ranks);
}

// ---- completion ----

void Window::complete_calls(const char* call, const std::vector<int>& targets, bool followed) {
  std::atomic_thread_fence(std::memory_order_seq_cst);  // direct stores are visible before what follows
  // Only fabric operations can be in flight: calls through mapped memory or process_vm were
  // complete when they returned, and message requests are counted until their reply.
  Transport& transport = comm_->runtime().transport();
  std::optional<Deadline> deadline;
  for (int target : targets) {
    if (routes_[target]->immediate()) continue;
    if (!deadline) deadline = comm_->runtime().deadline();
    transport.flush(comm_->members()[target], *deadline);
  }
  // Followed: the synchronization messages that end the epoch travel behind its message calls
  // and the target takes them only once it served those (Sync::barrier_follows_calls), so only
  // the replies that bring data here are awaited: a put or accumulate of a fence epoch between
  // two hosts then costs no round trip of its own. (Not for a dynamic window: a target refuses
  // calls to memory it detached, and its reply says so, to be raised at this synchronization.)
  // Calls to this rank itself (an accumulate through process_vm's route, any call with
  // RMA_TRANSPORT=libfabric) are messages to itself, which no synchronization message follows:
  // they are awaited too.
  followed = followed && !dynamic_;
  auto done = [&] {
    if (!followed) return fabric_->outstanding() == 0;
    return fabric_->fetching() == 0 && fabric_->outstanding_to(rank()) == 0;
  };
  if (!done()) {
    if (!deadline) deadline = comm_->runtime().deadline();
    transport.wait_until(done, *deadline, comm_->members(),
                         [&] { return epochs_.where(call, -1) + " (waiting for its operations to complete)"; });
  }
  if (followed) fabric_->epoch_ended_unanswered();
  for (int target : targets) sync_->wake(target);
}

void Window::complete_target(int target, const char* call) {
  check_alive(call, target);  // calls to a dead rank are lost, even those that "completed"
  std::atomic_thread_fence(std::memory_order_seq_cst);
  bool immediate = routes_[target]->immediate();
  if (!immediate || fabric_->outstanding_to(target) != 0) {
    Transport& transport = comm_->runtime().transport();
    Deadline deadline = comm_->runtime().deadline();
    if (!immediate) transport.flush(comm_->members()[target], deadline);
    // Calls that rode a lock request wait at the target for its grant, which a holder that
    // died would never give (any rank of the window may hold it: MessageSync::await_grant).
    bool riding = lock_ungranted(target);
    std::vector<int> watch = riding ? comm_->members() : std::vector<int>{comm_->members()[target]};
    transport.wait_until([&] { return fabric_->outstanding_to(target) == 0; }, deadline, watch,
                         [&] {
                           if (riding) return message_sync_->riding_wait(target, call);
                           return epochs_.where(call, target) + " (waiting for its calls to complete)";
                         });
  }
  sync_->wake(target);
}

// ---- fence ----

void Window::fence(int mode, const std::function<void()>& pass) {
  epochs_.before_fence(mode);
  bool fence_was_open = epochs_.fence_open();
  complete_calls("fence", all_ranks_, !pass && sync_->barrier_follows_calls());
  if (pass) {
    pass();
  } else {
    sync_->barrier();
  }
  epochs_.fenced(mode);
  if (fence_was_open) trace_epoch(false, "fence", -1, all_ranks_);
  if (epochs_.fence_open()) trace_epoch(true, "fence", -1, all_ranks_);
  fabric_->raise_refusal();
}

// ---- general active target ----

void Window::post(const std::vector<int>& group, int mode) {
  bool fence_was_open = epochs_.fence_open();
  epochs_.post(group, mode);
  trace_fence_closed(fence_was_open);
  trace_epoch(true, "exposure", -1, group);
  // Our stores before post are done (they are the caller's own); tell the origins.
  if (!epochs_.exposure_nocheck()) sync_->notify(Sync::Notice::Post, group);
}

void Window::start(const std::vector<int>& group, int mode) {
  bool fence_was_open = epochs_.fence_open();
  epochs_.start(group, mode);
  trace_fence_closed(fence_was_open);
  trace_epoch(true, "access", -1, group);
}

void Window::complete() {
  epochs_.before_complete();
  // Every target's post is consumed, even one we never addressed, so counts stay matched.
  await_posts("complete");
  // (Without a notice, MODE_NOCHECK, the target learns of the end from elsewhere.)
  complete_calls("complete", epochs_.access_group(), !epochs_.access_nocheck() && sync_->notices_follow_calls());
  if (!epochs_.access_nocheck()) sync_->notify(Sync::Notice::Complete, epochs_.access_group());
  trace_epoch(false, "access", -1, epochs_.access_group());
  epochs_.completed();
  fabric_->raise_refusal();
}

void Window::await_posts(const char* call) {
  for (int target : epochs_.access_group()) {
    if (epochs_.awaits_post(target)) await_post(target, call);
  }
}

bool Window::exposure_done() const {
  for (int origin : epochs_.exposure_group()) {
    if (!sync_->complete_arrived(origin)) return false;
  }
  return true;
}

void Window::wait() {
  epochs_.before_wait("wait");
  if (!epochs_.exposure_nocheck()) {
    const std::vector<int>& group = epochs_.exposure_group();
    std::vector<int> watch;
    for (int origin : group) watch.push_back(comm_->members()[origin]);
    comm_->runtime().transport().wait_until(
        [&] { return exposure_done(); }, comm_->runtime().deadline(), watch,
        [&] {
          std::vector<int> missing;
          for (int origin : group) {
            if (!sync_->complete_arrived(origin)) missing.push_back(origin);
          }
          return epochs_.where("wait", -1) + " for the exposure epoch of win.post(" + Epochs::ranks_text(group) +
                 ") (still waiting for win.complete from ranks " + Epochs::ranks_text(missing) + ")";
        },
        sync_->bell());
    for (int origin : group) sync_->take_complete(origin);
  }
  trace_epoch(false, "exposure", -1, epochs_.exposure_group());
  epochs_.waited();
}

bool Window::test() {
  epochs_.before_wait("test");
  comm_->runtime().transport().progress();
  if (!epochs_.exposure_nocheck() && !exposure_done()) {
    // A test loop must end too when an origin it waits for died: its complete never comes.
    if (peer_status_->any_dead()) {
      std::vector<int> watch;
      for (int origin : epochs_.exposure_group()) {
        if (!sync_->complete_arrived(origin)) watch.push_back(comm_->members()[origin]);
      }
      peer_status_->check(watch, comm_->runtime().rank(), epochs_.where("test", -1));
    }
    return false;
  }
  wait();
  return true;
}

void Window::wait_local(const std::function<bool()>& done, double timeout, const std::function<std::string()>& what) {
  if (freed()) throw RmaError("rma: " + what() + ": the window was freed");
  if (done()) return;
  double limit = comm_->runtime().options().timeout_seconds;
  bool own = timeout >= 0 && (limit <= 0 || timeout < limit);
  // (Deadline::after(0) is "never": a zero timeout still looks once more, then fails.)
  Deadline deadline = own ? Deadline::after(std::max(timeout, 1e-9)) : comm_->runtime().deadline();
  try {
    // On shared memory it sleeps on this rank's bell, which a rank rings when its calls here
    // complete (flush, unlock, fence, complete: Sync::wake) and at win.sync(); a plain store
    // without a win.sync() after it is seen at the next look (Transport::kBellCheck). Through
    // libfabric a one-sided write lands unannounced: the wait backs off to sleeping 1 ms at
    // most between looks.
    comm_->runtime().transport().wait_until(done, deadline, comm_->members(), what, sync_->bell());
  } catch (const TimeoutError&) {
    if (!own) throw;
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%g", timeout);
    throw TimeoutError("rma: " + what() + " on rank " + std::to_string(rank()) +
                       ": the condition still did not hold after " + seconds + " s (timeout=)");
  }
}

void Window::sync() {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  for (int rank = 0; rank < size(); ++rank) sync_->wake(rank);
}

// ---- passive target ----

void Window::lock(int target, int type, int mode, bool at_once) {
  bool fence_was_open = epochs_.fence_open();
  epochs_.before_lock("lock", target, type);
  trace_fence_closed(fence_was_open);
  check_alive("lock", target);
  if (mode & kModeNoCheck) {
    // The caller promises no conflicting lock exists: no message, no queue.
    epochs_.locked(target, type, true);
  } else if (acquire(target, type, at_once, "lock")) {
    epochs_.locked(target, type, false);
  }
  if (epochs_.held(target)) trace_epoch(true, lock_epoch_kind(type), target, {});
}

bool Window::try_lock(int target, int type) {
  bool fence_was_open = epochs_.fence_open();
  epochs_.before_lock("lock", target, type);
  trace_fence_closed(fence_was_open);
  check_alive("lock", target);
  if (!sync_->lock(target, type, true, "lock")) {
    // A holder that died keeps the lock forever: a loop of tries must end, as a lock() does
    // (a death anywhere in the window ends it, Sync::lock).
    if (peer_status_->any_dead())
      peer_status_->check(comm_->members(), comm_->runtime().rank(), epochs_.where("lock", target));
    return false;
  }
  epochs_.locked(target, type, false);
  trace_epoch(true, lock_epoch_kind(type), target, {});
  return true;
}

bool Window::acquire(int target, int type, bool at_once, const char* call) {
  if (at_once || !lock_may_ride(target)) return sync_->lock(target, type, false, call);
  message_sync_->defer_lock(target, type);
  return true;
}

void Window::release(int target, const char* call) {
  complete_target(target, call);
  if (!epochs_.held_nocheck(target)) sync_->unlock(target);
  epochs_.released(target);
}

void Window::unlock(int target) {
  epochs_.before_unlock(target);
  int type = epochs_.held(target);
  release(target, "unlock");
  trace_epoch(false, lock_epoch_kind(type), target, {});
  epochs_.unlocked();
  fabric_->raise_refusal();
}

void Window::lock_all(int mode, bool at_once) {
  bool fence_was_open = epochs_.fence_open();
  epochs_.before_lock_all();
  trace_fence_closed(fence_was_open);
  if (!(mode & kModeNoCheck)) {
    try {
      for (int target = 0; target < size(); ++target) {
        check_alive("lock_all", target);
        if (acquire(target, kLockShared, at_once, "lock_all")) epochs_.locked(target, kLockShared, false);
      }
    } catch (...) {
      // Give back the locks already taken: the epoch did not open.
      for (int target = 0; target < size(); ++target) {
        if (epochs_.held(target)) {
          sync_->unlock(target);
          epochs_.released(target);
        }
      }
      throw;
    }
  }
  epochs_.locked_all(mode & kModeNoCheck);
  trace_epoch(true, "lock_all", -1, all_ranks_);
}

void Window::unlock_all() {
  epochs_.before_unlock_all();
  for (int target = 0; target < size(); ++target) {
    if (epochs_.held(target)) release(target, "unlock_all");  // a retry after a failure skips what was released
  }
  epochs_.unlocked_all();
  trace_epoch(false, "lock_all", -1, all_ranks_);
  fabric_->raise_refusal();
}

void Window::flush(int target, const char* call) {
  if (!epochs_.before_flush(target, call)) return;
  complete_target(target, call);
  fabric_->raise_refusal();
}

void Window::flush_all(const char* call) {
  epochs_.before_flush_all(call);
  for (int target = 0; target < size(); ++target) {
    if (epochs_.passive_access(target)) complete_target(target, call);
  }
  fabric_->raise_refusal();
}

bool Window::target_idle(int target, const char* call) {
  if (target == kProcNull) return true;
  Transport& transport = comm_->runtime().transport();
  transport.progress();
  if (fabric_->outstanding_to(target) == 0 && transport.idle(comm_->members()[target])) return true;
  // A call to a rank that died never completes: a loop of tests must end as a wait does. Nor
  // does one held at its target for a lock that a dead rank holds (as complete_target watches).
  check_alive(call, target);
  if (lock_ungranted(target) && peer_status_->any_dead())
    peer_status_->check(comm_->members(), comm_->runtime().rank(), epochs_.where(call, target));
  return false;
}

bool Window::in_passive_epoch(int target) const { return epochs_.in_passive_epoch(target); }

}  // namespace rma
