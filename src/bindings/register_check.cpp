// RMA_CHECK's compiled parts for python/rma/check: the process's vector clock (check_clock_*),
// and a window's checker (_core.WindowCheck, made by rma._core.Window._check_start), whose
// steps the checked window's Python calls (lock, unlock, free, win.local) run after the plain
// ones; the compiled window runs the others itself.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "base/errors.hpp"
#include "call_site.hpp"
#include "check/vector_clock.hpp"
#include "check_state.hpp"
#include "runtime/communicator.hpp"

namespace py = pybind11;
using rma::check::VectorClock;

namespace {
// The clock of the current world. A clock is never destroyed: the checkers of windows made in
// an earlier world (rma.init again after rma.finalize) keep theirs, and windows may outlive the
// module's end.
VectorClock*& current_clock() {
  static VectorClock* clock = nullptr;
  return clock;
}
}  // namespace

namespace check_support {
VectorClock& process_clock() {
  if (current_clock() == nullptr) {
    throw rma::RmaError("rma: RMA_CHECK: the clock is made by rma.init() under RMA_CHECK");
  }
  return *current_clock();
}
}  // namespace check_support

void register_check(py::module_& m) {
  using check_support::process_clock;
  // The rows of a rank's clock board (rma.check.window allocates the board).
  m.attr("CHECK_BOARD_ROWS") = rma::check::WindowChecker::kBoardRows;
  m.def(
      "check_clock_start", [](int rank, int size) { current_clock() = new VectorClock(rank, size); },
      "Make this process's RMA_CHECK clock: rma.init() calls it under RMA_CHECK.");
  m.def("check_clock_running", [] { return current_clock() != nullptr; }, "Whether the RMA_CHECK clock was made.");
  m.def(
      "check_clock_publish", [] { return process_clock().publish(); },
      "Advance this rank's entry of the clock and return the clock to hand on.");
  m.def("check_clock_now", [] { return process_clock().entries(); }, "Return the clock as it stands.");
  m.def(
      "check_clock_merge", [](const std::vector<int64_t>& other) { process_clock().merge(other); },
      "Take in what another rank's clock knows.");
  m.def(
      "check_clock_merge_all",
      [](const std::vector<std::vector<int64_t>>& others) {
        for (const auto& other : others) process_clock().merge(other);
      },
      "Take in what other ranks' clocks know.");

  m.def(
      "check_clock_meet",
      [](rma::Communicator& comm, const std::string& call) {
        VectorClock& clock = process_clock();
        std::vector<int64_t> merged = clock.publish();
        {
          py::gil_scoped_release released;
          auto bytes = std::as_writable_bytes(std::span<int64_t>(merged));
          comm.allreduce(bytes, bytes, rma::ElementType::Int64, rma::ReduceOp::Max, [&call] { return call; });
        }
        clock.merge(merged);
      },
      py::arg("comm"), py::arg("call"),
      "Publish this rank's clock and take in every member's (a collective of comm that orders like a barrier).");
  m.def(
      "check_strided_spans",
      [](uint64_t start, uint64_t itemsize, const std::vector<std::pair<uint64_t, int64_t>>& dims) {
        std::vector<std::pair<uint64_t, uint64_t>> spans;
        for (auto span : rma::check::strided_spans(start, itemsize, dims)) spans.emplace_back(span.start, span.stop);
        return spans;
      },
      "The sorted, merged [start, stop) byte ranges of the elements at start plus every index * stride over dims "
      "(count, stride).");
  m.def(
      "check_pending_array_type",
      [] { return py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(pending_arrays::made_type())); },
      "The class of result arrays whose call has not completed (rma.check.pending gives it its hooks).");
  m.def(
      "check_touched",
      [](py::handle self, py::handle part, bool store) { pending_arrays::touched(self.ptr(), part.ptr(), store); },
      py::arg("array"), py::arg("part"), py::arg("store"),
      "A load (store=False) or store of `part` of a pending result array (rma.check.pending.PendingArray) by the "
      "program: raises (or warns of) it when a call not completed yet fills (or uses) those bytes.");

  using Release = py::call_guard<py::gil_scoped_release>;
  py::class_<CheckState, std::shared_ptr<CheckState>>(m, "WindowCheck",
                                                      "A checked window's RMA_CHECK state (check/window_checker.hpp).")
      .def(
          "exchange", [](CheckState& s, const std::string& call) { s.steps().freed(call.c_str()); },
          "free: every call completed, here and at its target, and every rank's accesses exchanged (collective).")
      .def(
          "direct",
          [](CheckState& s, int target, bool store, const std::vector<std::pair<uint64_t, uint64_t>>& spans) {
            rma::check::Spans list;
            for (auto [start, stop] : spans) list.push_back({start, stop});
            s.checker().direct(target, store, std::move(list), call_site());
          },
          "A load (store=False) or store of target's memory by this rank, at these sorted byte spans.")
      .def("report", [](CheckState& s) { s.steps().report(); }, "Raise (or warn of) the first conflict found, once.");
}
