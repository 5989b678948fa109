#include "check_state.hpp"

#include "call_site.hpp"

#include <pybind11/numpy.h>

#include <cstring>
#include <unordered_map>

#include "check/byte_digest.hpp"

namespace py = pybind11;
using rma::check::ArraySlot;

namespace {

// An array's bytes, in C order (a copy for a strided array).
uint64_t digest_of(PyObject* array) {
  auto* header = py::detail::array_proxy(array);
  if (header->flags & py::detail::npy_api::NPY_ARRAY_C_CONTIGUOUS_) {
    size_t size = static_cast<size_t>(py::reinterpret_borrow<py::array>(array).nbytes());
    return rma::check::digest_of(std::span(reinterpret_cast<const std::byte*>(header->data), size));
  }
  // (ndarray's own tobytes: a pending array's would count as the program's read)
  static PyObject* tobytes =
      py::object(py::handle(reinterpret_cast<PyObject*>(py::detail::npy_api::get().PyArray_Type_)).attr("tobytes"))
          .release()
          .ptr();
  py::bytes copy = py::reinterpret_borrow<py::object>(tobytes)(py::handle(array));
  std::string_view bytes = copy;
  return rma::check::digest_of(std::as_bytes(std::span(bytes.data(), bytes.size())));
}

size_t elements_of(PyObject* array) { return static_cast<size_t>(py::reinterpret_borrow<py::array>(array).size()); }

}  // namespace

py::object CheckState::stage(const arguments::Operand& result, PyObject* given) {
  if (result.array.ptr() != given || !pending_arrays::watchable(given) || result.bytes == 0) {
    return {};
  }
  PyObject* staged = PyByteArray_FromStringAndSize(nullptr, static_cast<Py_ssize_t>(result.bytes));
  if (staged == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(staged);
}

uint64_t CheckState::record(int target, const std::string& call, rma::check::AccessKind kind, std::string_view op,
                            std::string_view dtype, uint32_t element_bytes, std::span<const rma::check::Span> spans,
                            PyObject* origin, PyObject* result, PyObject* staged, bool copied) {
  bool watch_origin = origin != nullptr && elements_of(origin) > 0;  // (an empty one cannot change)
  rma::check::CallSteps::Arrays arrays;
  if (result != nullptr && staged != nullptr) {
    arrays.result = hold(result, staged);
  } else if (result != nullptr && copied && pending_arrays::watchable(result) && elements_of(result) > 0) {
    arrays.result = hold(result, nullptr, true);
  }
  if (watch_origin) arrays.origin = hold(origin, nullptr);
  return steps_.record(target, call, kind, op, dtype, element_bytes, spans, arrays);
}

ArraySlot CheckState::hold(PyObject* array, PyObject* staged, bool copied) {
  Held held{py::reinterpret_borrow<py::object>(array),
            staged != nullptr ? py::reinterpret_borrow<py::object>(staged) : py::object(), copied};
  if (staged != nullptr || copied) pending_arrays::watch(array);  // (its reads are seen until release)
  if (free_.empty()) {
    held_.push_back(std::move(held));
    free_.reserve(held_.size());  // (so that release, in a destructor, never allocates)
    return static_cast<ArraySlot>(held_.size() - 1);
  }
  ArraySlot slot = free_.back();
  free_.pop_back();
  held_[slot] = std::move(held);
  return slot;
}

uint64_t CheckState::digest(ArraySlot slot) { return held_[slot].copied ? 0 : digest_of(held_[slot].array.ptr()); }

void CheckState::memory(ArraySlot slot, rma::check::Spans& bytes) {
  pending_arrays::bytes_of(held_[slot].array.ptr(), bytes);
}

void CheckState::deliver(ArraySlot slot) {
  const Held& held = held_[slot];
  if (!held.staged) return;  // (a copied result: the window's own copy fills it)
  std::memcpy(py::detail::array_proxy(held.array.ptr())->data, PyByteArray_AS_STRING(held.staged.ptr()),
              static_cast<size_t>(PyByteArray_GET_SIZE(held.staged.ptr())));
}

void CheckState::release(ArraySlot slot) {
  if (held_[slot].staged || held_[slot].copied) pending_arrays::unwatch(held_[slot].array.ptr());
  held_[slot] = {};
  free_.push_back(slot);
}

void CheckState::blocking(const std::function<void()>& step) {
  py::gil_scoped_release released;
  step();
}

const std::string& CheckState::call_site() { return ::call_site(); }

void CheckState::report(const std::string& conflict) { check_support::report(conflict); }

namespace check_support {

void report(const std::string& conflict) {
  static PyObject* reporter = py::object(py::module_::import("rma.check").attr("report")).release().ptr();
  py::str message(conflict);
  PyObject* done = PyObject_CallOneArg(reporter, message.ptr());
  if (done == nullptr) throw py::error_already_set();
  Py_DECREF(done);
}

}  // namespace check_support
