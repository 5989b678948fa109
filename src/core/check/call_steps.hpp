// RMA_CHECK's part of each call a checked window makes, in order: a data call's record and the
// watches of its arrays (array_watches.hpp), and the checker's steps of each synchronization
// call (window_checker.hpp), with what they must remember between calls: the locks the checker
// saw granted, start's group, the data calls' serials.
//
// The code that runs the window's calls (the bindings) holds the arrays and runs these steps
// as the plain calls return; what it must do for them (digest and fill the arrays, let other
// threads run while a step waits, tell the user) it does as the CallHost. A conflict is
// reported by the closing calls, never by an opening one (post, start), which would leave its
// epoch open behind the exception.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "check/array_watches.hpp"
#include "check/window_checker.hpp"
#include "elements/region.hpp"
#include "window/window.hpp"

namespace rma::check {

class CallHost : public ArrayHolder {
 public:
  // Runs a step that waits for other ranks (the bindings: with the GIL released).
  virtual void blocking(const std::function<void()>& step) = 0;
  // The user's place of the call being made ("file.py:12"): a string that lives as long as
  // the process.
  virtual const std::string& call_site() = 0;
  // Tells the user of a conflict (the bindings: raises under RMA_CHECK=1, warns under
  // RMA_CHECK=warn).
  virtual void report(const std::string& conflict) = 0;

 protected:
  ~CallHost() = default;
};

class CallSteps {
 public:
  // memory: the process's arrays in use by pending calls, every window's (one PendingMemory).
  CallSteps(std::shared_ptr<WindowChecker> checker, CallHost& host, PendingMemory& memory);
  WindowChecker& checker() noexcept { return *checker_; }

  // ---- data calls ----
  // A region's spans, for record (valid until the next call).
  std::span<const Span> spans_of(const Region& region);
  // The host's slots of a data call's arrays to watch: its result array when the call fills a
  // private buffer of the host's, its origin array when it has one with elements.
  struct Arrays {
    std::optional<ArraySlot> result;
    std::optional<ArraySlot> origin;
  };
  // After a data call to target (not PROC_NULL) has returned: its access, and the watches of
  // its arrays (the slots are the watches' from now: released when they end, or at once when
  // the call touched nothing). Returns the call's serial, which a request names to complete its
  // own watches. A conflict with this origin's earlier calls is reported here.
  // call, op, dtype, element_bytes: as WindowChecker::record's.
  uint64_t record(int target, const std::string& call, AccessKind kind, std::string_view op, std::string_view dtype,
                  uint32_t element_bytes, std::span<const Span> spans, Arrays arrays);
  // One request-based call completed at this rank (its wait, or a test that succeeded).
  void request_completed(int target, uint64_t serial);

  // ---- synchronization: each once the plain call has returned, unless it says otherwise ----
  // A flush of targets (local: a flush_local, which orders nothing at them).
  void flushed(std::span<const int> targets, bool local);
  // A fence's part of its barrier: every rank's accesses exchanged (collective, run in place of
  // the barrier as the plain call waits; not from the host). Then fenced.
  void exchange(const char* call);
  void fenced();
  // After free (collective): every call completed, here and at its target, and every rank's
  // accesses exchanged. Does not report (the host reports once its clock board is gone).
  void freed(const char* call);
  void posting();  // before post: the clock the origins take
  void posted();
  void started(std::vector<int> group);
  // Before complete (`window`: the checked one, whose posts it waits for): the access epoch's
  // calls completed and sent to their targets with this rank's clock. After it: completed.
  void completing(Window& window);
  void completed();
  void waited();  // wait, or a test that succeeded: the origins' completes taken in
  // lock and lock_all, granted: the earlier holders' clocks taken in. As the plain call waits
  // (not from the host), as are unlocking and unlocking_all.
  void locked(int target, bool exclusive);
  void locked_all();
  // unlock and unlock_all: before the plain call, the clock left at the targets and the
  // accesses sent; after it, unlocked: the calls completed here.
  void unlocking(int target);
  void unlocking_all();
  void unlocked(std::span<const int> targets);
  void synced();  // win.sync: the accesses other origins sent taken in

  // Tells the host of the first conflict found, once.
  void report();

 private:
  void finished(std::optional<std::string> found) { checker_->keep(std::move(found)); }

  std::shared_ptr<WindowChecker> checker_;
  CallHost& host_;
  ArrayWatches watches_;
  std::vector<Span> spans_;    // (memory reused by each record)
  std::map<int, bool> locks_;  // target -> exclusive, from lock to unlock
  bool lock_all_ = false;
  std::vector<int> access_group_;  // start's, until complete
  uint64_t serial_ = 0;
};

}  // namespace rma::check
