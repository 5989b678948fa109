// How the compiled window's methods run (window_object.cpp and the window_*_calls.cpp): a body
// whose C++ exceptions become Python's, core calls with the GIL released, the argument
// matching of each method, and the checks every call starts with.
#pragma once

#include <Python.h>
#include <pybind11/pybind11.h>

#include <span>
#include <string>
#include <string_view>

#include "arguments.hpp"
#include "base/errors.hpp"
#include "guarded_call.hpp"
#include "method_object.hpp"
#include "traced_call.hpp"
#include "window_object.hpp"

namespace window_methods {

namespace py = pybind11;
using arguments::Parameters;

// Copies from 256 KiB on let other Python threads run meanwhile.
constexpr uint64_t kReleaseGilBytes = 256 * 1024;

inline WindowState& state_of(WindowObject* self) { return *self->state; }
inline rma::Window& core_of(WindowObject* self) { return *self->state->core; }

using guarded_call::guarded;
using guarded_call::released;

// Releases the GIL around body only for large copies.
template <class Body>
bool quick(uint64_t bytes, Body&& body) {
  if (bytes < kReleaseGilBytes) return body();
  bool done = false;
  released([&] { done = body(); });
  return done;
}

inline void check_open(WindowObject* self, const char* call) {
  rma::Window& core = core_of(self);
  if (core.freed()) throw rma::RmaError("rma: " + core.where(call, -1) + ": the window was freed");
}

inline bool given(PyObject* value) { return value != nullptr && value != Py_None; }

// A rank argument, checked by the core's rule.
inline int rank_of(WindowObject* self, PyObject* value, const char* call, const char* what, bool allow_null) {
  int64_t rank = arguments::integer(value, call, what);
  core_of(self).check_rank(call, rank, allow_null);
  return static_cast<int>(rank);
}

// Whether RMA_TRACE records a method's calls: the user's calls, not rma's own plumbing.
constexpr bool traced(const Parameters& p) { return p.method[0] != '_' && std::string_view(p.method) != "check_start"; }

// The window's number in the trace (the same on every rank).
inline int64_t trace_id(PyObject* self) { return reinterpret_cast<WindowObject*>(self)->state->core->id(); }

// A method: match the arguments, check that the window is open, run the body.
template <const Parameters& P, PyObject* (*Body)(WindowObject*, PyObject**)>
PyObject* method(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  return guarded([&]() -> PyObject* {
    TracedCall traced_call(traced(P) ? P.method : nullptr, rma::trace::Kind::Call, [self] { return trace_id(self); });
    PyObject* slots[6];
    arguments::match(P, args, nargs, kwnames, slots);
    return Body(reinterpret_cast<WindowObject*>(self), slots);
  });
}

// The same for methods without parameters.
template <const Parameters& P, PyObject* (*Body)(WindowObject*)>
PyObject* method0(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  return guarded([&]() -> PyObject* {
    TracedCall traced_call(traced(P) ? P.method : nullptr, rma::trace::Kind::Call, [self] { return trace_id(self); });
    arguments::match(P, args, nargs, kwnames, nullptr);
    return Body(reinterpret_cast<WindowObject*>(self));
  });
}

inline PyObject* none() { Py_RETURN_NONE; }

// The methods of each file, for rma._core.Window's dictionary (window_object.cpp adds its own).
std::span<const MethodSpec> data_call_methods();
std::span<const MethodSpec> epoch_call_methods();
std::span<const MethodSpec> local_call_methods();

}  // namespace window_methods
