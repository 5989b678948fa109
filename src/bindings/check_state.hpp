// RMA_CHECK's part of a compiled window, as the bindings hold it: the core's steps of each call
// (check/call_steps.hpp: the records, the watches of origin and result arrays, the order of
// each synchronization's steps) and what those steps ask of Python (the CallHost): the NumPy
// arrays the watches name and their digests, the GIL, the user's line, the report.
//
// A result array the checker watches is filled through a private buffer ("staged", a
// bytearray), which the call's completion copies into the array after comparing the array with
// its digest: a read before then would see the array as it was before the call, as it may
// through a network; it is reported at the read (pending_arrays.hpp), a change at the latest by
// the completion. win.local and its views (a NumPy subclass) fill in place: the owner's loads
// and stores of them are watched already.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "arguments.hpp"
#include "check/call_steps.hpp"
#include "pending_arrays.hpp"

class CheckState final : public rma::check::CallHost {
 public:
  explicit CheckState(std::shared_ptr<rma::check::WindowChecker> checker)
      : steps_(std::move(checker), *this, pending_arrays::memory()) {}
  // Only in place: the steps hold a reference to it.
  CheckState(const CheckState&) = delete;
  CheckState& operator=(const CheckState&) = delete;

  rma::check::CallSteps& steps() noexcept { return steps_; }
  rma::check::WindowChecker& checker() noexcept { return steps_.checker(); }

  // Before a call that fills `result` (the caller's array, used in place): a private buffer
  // (a bytearray) the call should fill instead, or null when the array is not watched. The
  // caller holds it as long as the call may write into it, whatever the checker does.
  pybind11::object stage(const arguments::Operand& result, PyObject* given);
  // After a data call to target (not PROC_NULL) has returned: CallSteps::record, watching its
  // origin array (null: none) and its result array filled through `staged`, or (copied: a
  // strided result, which a contiguous stand-in of the window's fills and the completion copies
  // into) through a copy of its own; neither: not watched.
  uint64_t record(int target, const std::string& call, rma::check::AccessKind kind, std::string_view op,
                  std::string_view dtype, uint32_t element_bytes, std::span<const rma::check::Span> spans,
                  PyObject* origin, PyObject* result, PyObject* staged, bool copied);

  // ---- what the steps ask of Python (rma::check::CallHost) ----
  uint64_t digest(rma::check::ArraySlot slot) override;
  void memory(rma::check::ArraySlot slot, rma::check::Spans& bytes) override;
  void deliver(rma::check::ArraySlot slot) override;
  void release(rma::check::ArraySlot slot) override;
  void blocking(const std::function<void()>& step) override;
  const std::string& call_site() override;
  void report(const std::string& conflict) override;

 private:
  struct Held {
    pybind11::object array;   // the caller's
    pybind11::object staged;  // what the call fills, for a result (a bytearray)
    // A strided result, filled by the window's own copy at the completion: not compared with a
    // digest (the copy has changed it by then); its loads and stores are still seen.
    bool copied = false;
  };
  rma::check::ArraySlot hold(PyObject* array, PyObject* staged, bool copied = false);

  std::vector<Held> held_;                   // by slot
  std::vector<rma::check::ArraySlot> free_;  // slots released, for the next holds
  rma::check::CallSteps steps_;
};

namespace check_support {
// The process's vector clock (made by check_clock_start).
rma::check::VectorClock& process_clock();
// Tells the user of a conflict: rma.check.report (raises under RMA_CHECK=1, warns under warn).
void report(const std::string& conflict);
}  // namespace check_support
