// RMA_CHECK's part of a compiled window (check/window_checker.hpp has the rules and the
// messages): the data calls record their accesses here as they return, and the origin and
// result arrays they use are watched until the call completes at this rank.
//
// spec/002: an origin array must not be changed, nor a result array read or changed, until
// the call completed at the origin (a flush, flush_local, unlock, fence, complete, or the
// wait of its request). rma copies small origins at once on one host, but not a large put
// through libfabric, which reads the array in place until then; and it fills a result some
// time before that completion through a network. So the watch keeps a digest of each origin
// array and compares it at the completion; and a result array's call fills a private buffer
// ("staged"), which the completion copies into the array after comparing the array with its
// digest. A read before then sees the array as it was before the call, as it may through a
// network (not reported); a change is. win.local and its views (a NumPy subclass) fill in
// place: the owner's loads and stores of them are watched already.
#pragma once

#include <pybind11/pybind11.h>

#include <cstddef>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "arguments.hpp"
#include "check/window_checker.hpp"
#include "elements/region.hpp"

class CheckState {
 public:
  explicit CheckState(std::shared_ptr<rma::check::WindowChecker> checker) : checker_(std::move(checker)) {}
  rma::check::WindowChecker& checker() { return *checker_; }

  // Before a call that fills `result` (the caller's array, used in place): a private buffer
  // (a bytearray) the call should fill instead, or null when the array is not watched. The
  // caller holds it as long as the call may write into it, whatever the checker does.
  pybind11::object stage(const arguments::Operand& result, PyObject* given);
  // After a data call to target (not PROC_NULL) has returned: its access, and the watches of
  // its origin array (null: none) and of its result array filled through `staged` (null: not
  // staged). Returns the call's serial, which a request names to complete its own watches. A
  // conflict with this origin's earlier calls is reported here (raises under RMA_CHECK=1).
  // call, op, dtype: names that live as long as the process ("win.put" interned).
  uint64_t record(int target, const std::string& call, rma::check::AccessKind kind, std::string_view op,
                  std::string_view dtype, std::span<const rma::check::Span> spans, PyObject* origin, PyObject* result,
                  PyObject* staged);
  // A region's spans, for record (valid until the next call).
  std::span<const rma::check::Span> spans_of(const rma::Region& region);

  // The calls to targets completed at this rank (once the plain call that completes them has
  // returned): origin arrays are free again, result arrays get what the calls brought.
  void completed_here(std::span<const int> targets);
  void completed_everywhere();
  // One request-based call completed at this rank (its wait, or a test that succeeded).
  void request_completed(int target, uint64_t serial);
  // After a flush: the accesses completed at their targets, and completed_here unless local.
  void flushed(std::span<const int> targets, bool local);
  // Raises (RMA_CHECK=1) or warns (RMA_CHECK=warn) of the first conflict found, once.
  void report();

  // The synchronization calls' steps, once the plain call has returned (the blocking ones
  // release the GIL). A conflict is reported by the closing calls, never by an opening one
  // (post, start), which would leave its epoch open behind the exception.
  // fence and free (collective): every call completed, here and at its target, and every
  // rank's accesses exchanged. Does not report. A fence runs the exchange in place of its
  // barrier (exchange_for_fence, without the GIL: it passes the ranks as the barrier would),
  // then fenced_after_exchange.
  void fenced(const char* call);
  void exchange_for_fence(const char* call);
  void fenced_after_exchange() { completed_everywhere(); }
  void posting();  // before post: the clock the origins take
  void posted();
  void started(std::vector<int> group);
  // Before complete (`core`: the window's, whose posts it waits for): the access epoch's
  // calls completed and sent to their targets with this rank's clock. After it: completed.
  void completing(rma::Window& core);
  void completed();
  void waited();  // wait, or a test that succeeded: the origins' completes taken in
  // lock and lock_all, granted: the earlier holders' clocks taken in. Without the GIL: they
  // run in the plain call's own release of it, as do unlocking and unlocking_all.
  void locked(int target, bool exclusive);
  void locked_all();
  // unlock and unlock_all: before the plain call, the clock left at the targets and the
  // accesses sent; after it (with the GIL), the calls completed here.
  void unlocking(int target);
  void unlocking_all();
  void unlocked(std::span<const int> targets);
  void synced();  // win.sync: the accesses other origins sent taken in

 private:
  struct Watched {
    int target;
    uint64_t serial;
    pybind11::object array;  // the caller's
    uint64_t digest;         // of its bytes at the call
    rma::check::AccessRef access;
    bool result;              // a result array (else an origin)
    pybind11::object staged;  // what the call filled, for a result (a bytearray)
  };
  // Finishes the watches `done` picks (in call order), keeping the others.
  template <class Done>
  void finish_watches(Done&& done);
  void finish(std::span<const Watched> entries);

  std::shared_ptr<rma::check::WindowChecker> checker_;
  std::vector<Watched> watched_;         // in call order
  std::vector<Watched> finishing_;       // (memory reused by each completion)
  std::vector<rma::check::Span> spans_;  // (memory reused by each record)
  std::map<int, bool> locks_;            // target -> exclusive, from lock to unlock
  bool lock_all_ = false;
  std::vector<int> access_group_;  // start's, until complete
  uint64_t serial_ = 0;
};

namespace check_support {
// The user's file and line of the call being made ("file.py:12"): the innermost Python frame
// outside rma and NumPy. The string lives as long as the process.
const std::string& call_site();
// The process's vector clock (made by check_clock_start).
rma::check::VectorClock& process_clock();
}  // namespace check_support
