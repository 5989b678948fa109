// rma._core's side of the trace (RMA_TRACE): start and stop the rank's ring (base/trace.hpp),
// take its records for rma.trace.recording, and mark errors Python raises.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <unordered_map>

#include "base/trace.hpp"

namespace py = pybind11;

namespace {

// Record strings as Python objects: one str per distinct string of a take (most repeat).
class Strings {
 public:
  py::object operator()(const char* text) {
    if (text == nullptr) return py::none();
    auto [found, fresh] = made_.try_emplace(text);
    if (fresh) found->second = py::str(text);
    return found->second;
  }

 private:
  std::unordered_map<const char*, py::object> made_;
};

py::tuple take_records() {
  rma::trace::Taken taken = rma::trace::take();
  Strings strings;
  py::list records;
  for (const rma::trace::Record& r : taken.records) {
    records.append(py::make_tuple(static_cast<int>(r.kind), strings(r.name), strings(r.site), strings(r.text),
                                  r.begin_ns, r.end_ns, r.bytes, r.object, r.target, r.thread));
  }
  return py::make_tuple(records, taken.dropped, taken.capacity);
}

}  // namespace

void register_trace(py::module_& m) {
  m.def("_trace_start", &rma::trace::start, py::arg("capacity"),
        "Clear this rank's trace ring, size it to `capacity` records and start recording.");
  m.def("_trace_stop", &rma::trace::stop, "Stop recording (the records stay until taken).");
  m.def("_trace_on", &rma::trace::on, "Whether this rank records its trace.");
  m.def("_trace_now", &rma::trace::now_ns, "The trace's clock, in ns (CLOCK_MONOTONIC, as time.monotonic_ns).");
  m.def("_trace_take", &take_records,
        "Take this rank's records, oldest first, as (records, dropped, capacity); each record is\n"
        "(kind, name, site, text, begin_ns, end_ns, bytes, object, target, thread).");
  m.def(
      "_trace_error",
      [](const std::string& kind, const std::string& message) { rma::trace::error(kind.c_str(), message); },
      py::arg("kind"), py::arg("message"), "Mark an error raised in Python (a ConflictError) in the trace.");
}
