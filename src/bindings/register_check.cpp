// RMA_CHECK's compiled parts for python/rma/check: the process's vector clock
// (_core.check_clock), and a window's checker (_core.WindowCheck, made by
// rma._core.Window._check_start), whose synchronization steps the checked window's Python calls
// run after the plain ones.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>

#include "check/vector_clock.hpp"
#include "check_state.hpp"
#include "errors.hpp"

namespace py = pybind11;
using rma::check::VectorClock;

namespace {
std::optional<VectorClock>& clock_slot() {
  static auto* clock = new std::optional<VectorClock>();  // (never destroyed: windows may outlive the module's end)
  return *clock;
}

std::vector<int> ranks_of(const py::iterable& ranks) {
  std::vector<int> out;
  for (py::handle rank : ranks) out.push_back(rank.cast<int>());
  return out;
}
}  // namespace

namespace check_support {
VectorClock& process_clock() {
  if (!clock_slot()) throw rma::RmaError("rma: RMA_CHECK: the clock is made by rma.init() under RMA_CHECK");
  return *clock_slot();
}
}  // namespace check_support

void register_check(py::module_& m) {
  using check_support::process_clock;
  m.def(
      "check_clock_start", [](int rank, int size) { clock_slot().emplace(rank, size); },
      "Make this process's RMA_CHECK clock: rma.init() calls it under RMA_CHECK.");
  m.def("check_clock_running", [] { return clock_slot().has_value(); }, "Whether the RMA_CHECK clock was made.");
  m.def(
      "check_clock_publish",
      [] {
        process_clock().publish();
        return process_clock().entries();
      },
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
      "check_strided_spans",
      [](uint64_t start, uint64_t itemsize, const std::vector<std::pair<uint64_t, int64_t>>& dims) {
        std::vector<std::pair<uint64_t, uint64_t>> spans;
        for (auto span : rma::check::strided_spans(start, itemsize, dims)) spans.emplace_back(span.start, span.stop);
        return spans;
      },
      "The sorted, merged [start, stop) byte ranges of the elements at start plus every index * stride over dims "
      "(count, stride).");

  using Release = py::call_guard<py::gil_scoped_release>;
  py::class_<CheckState, std::shared_ptr<CheckState>>(m, "WindowCheck",
                                                      "A checked window's RMA_CHECK state (check/window_checker.hpp).")
      .def(
          "post", [](CheckState& s, const py::iterable& group) { s.checker().post(ranks_of(group)); },
          "post: this rank's clock to each origin of group.")
      .def(
          "expect_posts", [](CheckState& s, const py::iterable& group) { s.checker().expect_posts(ranks_of(group)); },
          "start: take each target's post clock before the first access to it.")
      .def(
          "send_completes",
          [](CheckState& s, const py::iterable& group) {
            std::vector<int> ranks = ranks_of(group);
            py::gil_scoped_release released;
            s.checker().send_completes(ranks);
          },
          "complete: the accesses to each target of group, with this rank's clock.")
      .def(
          "take_completes",
          [](CheckState& s, const py::iterable& group) {
            std::vector<int> ranks = ranks_of(group);
            py::gil_scoped_release released;
            s.checker().take_completes(ranks);
          },
          "wait: take in the complete of each origin of group.")
      .def(
          "exchange_all",
          [](CheckState& s, const std::string& call) { s.checker().exchange_all([call] { return call; }); }, Release(),
          "fence and free: every rank's accesses to every other, with its clock; then a new epoch.")
      .def(
          "complete", [](CheckState& s, const py::iterable& targets) { s.checker().complete(ranks_of(targets)); },
          "The accesses to targets completed there.")
      .def(
          "completed_here", [](CheckState& s, const py::iterable& targets) { s.completed_here(ranks_of(targets)); },
          "The calls to targets completed at this rank: origin arrays are free, result arrays filled.")
      .def(
          "send", [](CheckState& s, int target) { s.checker().send(target); }, "Send target's completed accesses now.")
      .def(
          "drain", [](CheckState& s) { s.checker().drain(); }, "Take in the accesses sent without a collective call.")
      .def(
          "new_epoch",
          [](CheckState& s, const std::string& kind, const std::string& where) { s.checker().new_epoch(kind, where); },
          py::arg("kind"), py::arg("where") = "", "Name the epoch this rank's next accesses belong to.")
      .def(
          "direct",
          [](CheckState& s, int target, bool store, const std::vector<std::pair<uint64_t, uint64_t>>& spans) {
            rma::check::Spans list;
            for (auto [start, stop] : spans) list.push_back({start, stop});
            s.checker().direct(target, store, std::move(list), check_support::call_site());
          },
          "A load (store=False) or store of target's memory by this rank, at these sorted byte spans.")
      .def("report", &CheckState::report, "Raise (or warn of) the first conflict found, once.");
}
