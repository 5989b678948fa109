// The calls of rma._core.Window about this rank's own memory: wait_until, which waits (GIL
// released, progress going on) until an element of win.local compares as asked, and a dynamic
// window's attach/detach, which expose arrays and keep them alive while they are attached.
#include <pybind11/numpy.h>

#include <cmath>
#include <cstring>
#include <span>
#include <string>
#include <utility>

#include "window_docs.hpp"
#include "window_methods.hpp"

namespace py = pybind11;

using namespace window_methods;

namespace {

using arguments::Parameters;

constexpr Parameters kWaitUntil{"wait_until", {{"index"}, {"cmp"}, {"value"}, {"timeout", "None"}}, 3};
constexpr Parameters kAttach{"attach", {{"array"}}, 1};
constexpr Parameters kDetach{"detach", {{"array"}}, 1};

// ---- waiting for the local memory ----

int comparison_of(PyObject* value) {
  static constexpr std::pair<const char*, int> kComparisons[] = {{"==", Py_EQ}, {"!=", Py_NE}, {"<", Py_LT},
                                                                 {"<=", Py_LE}, {">", Py_GT},  {">=", Py_GE}};
  if (PyUnicode_Check(value)) {
    const char* text = PyUnicode_AsUTF8(value);
    if (text == nullptr) throw py::error_already_set();
    for (auto [name, op] : kComparisons) {
      if (std::strcmp(text, name) == 0) return op;
    }
  }
  py::str shown = py::repr(value);
  throw rma::UsageError("rma: win.wait_until: cmp must be one of ['!=', '<', '<=', '==', '>', '>='], not " +
                        shown.cast<std::string>());
}

double timeout_of(PyObject* value) {
  if (!given(value)) return -1;
  if (PyBool_Check(value) || !(PyFloat_Check(value) || PyIndex_Check(value))) {
    throw rma::ArgumentTypeError(std::string("rma: win.wait_until: timeout must be a number of seconds or None, not ") +
                                 Py_TYPE(value)->tp_name);
  }
  double seconds = PyFloat_AsDouble(value);
  if (seconds == -1 && PyErr_Occurred()) throw py::error_already_set();
  if (std::isnan(seconds) || seconds < 0) {
    throw rma::UsageError("rma: win.wait_until: timeout must be None or a number of seconds >= 0, not " +
                          py::repr(value).cast<std::string>());
  }
  return seconds;
}

// win.wait_until(index, cmp, value, *, timeout=None): the core waits (GIL released, progress
// going on, PeerError when a rank of the window dies, RMA_TIMEOUT); each look at local[index]
// takes the GIL for NumPy's indexing and comparison.
PyObject* wait_until(WindowObject* self, PyObject** slot) {
  check_open(self, "wait_until");
  int op = comparison_of(slot[1]);
  double timeout = timeout_of(slot[3]);
  PyObject *index = slot[0], *value = slot[2];
  py::object local = py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(self)).attr("_local");
  py::object seen;
  // With the GIL held: whether local[index] <op> value; false with the Python error set.
  auto look = [&](bool& holds) {
    PyObject* element = PyObject_GetItem(local.ptr(), index);
    if (element == nullptr) return false;
    seen = py::reinterpret_steal<py::object>(element);
    PyObject* compared = PyObject_RichCompare(element, value, op);
    if (compared == nullptr) return false;
    int truth = PyObject_IsTrue(compared);
    Py_DECREF(compared);
    if (truth < 0) return false;
    holds = truth != 0;
    return true;
  };
  bool holds = false;
  if (!look(holds)) throw py::error_already_set();
  if (!holds) {
    std::string what = core_of(self).where("wait_until", -1) + " (until local[" + py::repr(index).cast<std::string>() +
                       "] " + PyUnicode_AsUTF8(slot[1]) + " " + py::repr(value).cast<std::string>() + ")";
    PyObject *error_type = nullptr, *error_value = nullptr, *error_traceback = nullptr;
    // Called by the core's wait without the GIL: an error of the look ends the wait and is
    // raised here afterwards.
    auto done = [&]() -> bool {
      PyGILState_STATE gil = PyGILState_Ensure();
      bool ok = look(holds);
      if (!ok) PyErr_Fetch(&error_type, &error_value, &error_traceback);
      PyGILState_Release(gil);
      return !ok || holds;
    };
    released([&] { core_of(self).wait_local(done, timeout, [&] { return what; }); });
    if (error_type != nullptr) {
      PyErr_Restore(error_type, error_value, error_traceback);
      throw py::error_already_set();
    }
  }
  if (py::isinstance<py::array>(seen)) return seen.attr("copy")().release().ptr();
  return seen.release().ptr();
}

// ---- dynamic windows ----

PyObject* attach(WindowObject* self, PyObject** slot) {
  check_open(self, "attach");
  PyObject* array = slot[0];
  if (!arguments::is_array(array)) {
    throw rma::ArgumentTypeError(std::string("rma: win.attach: expected a NumPy array, not ") +
                                 Py_TYPE(array)->tp_name);
  }
  auto* header = py::detail::array_proxy(array);
  int needed = py::detail::npy_api::NPY_ARRAY_C_CONTIGUOUS_ | py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
  if ((header->flags & needed) != needed) {
    throw rma::UsageError("rma: win.attach: the array must be writable and C-contiguous");
  }
  arguments::check_plain(header->descr, "attach", "array");
  auto described = py::reinterpret_borrow<py::array>(array);
  if (!state_of(self).dynamic) {
    throw rma::RmaError("rma: " + core_of(self).where("attach", -1) + ": only a dynamic window takes attach");
  }
  core_of(self).attach(header->data, static_cast<uint64_t>(described.nbytes()));
  auto address = reinterpret_cast<uintptr_t>(header->data);
  state_of(self).attached[address] = described;
  return PyLong_FromUnsignedLongLong(address);
}

PyObject* detach(WindowObject* self, PyObject** slot) {
  check_open(self, "detach");
  WindowState& state = state_of(self);
  auto found = arguments::is_array(slot[0])
                   ? state.attached.find(reinterpret_cast<uintptr_t>(py::detail::array_proxy(slot[0])->data))
                   : state.attached.end();
  if (found == state.attached.end())
    throw rma::UsageError("rma: win.detach: that array is not attached to this window");
  core_of(self).detach(reinterpret_cast<void*>(found->first));
  state.attached.erase(found);
  return none();
}

#define RMA_METHOD(parameters, body, doc) {parameters, &method<parameters, body>, doc}

const MethodSpec local_methods[] = {
    RMA_METHOD(kWaitUntil, wait_until, window_docs::wait_until),
    RMA_METHOD(kAttach, attach, window_docs::attach),
    RMA_METHOD(kDetach, detach, window_docs::detach),
};

#undef RMA_METHOD

}  // namespace

namespace window_methods {
std::span<const MethodSpec> local_call_methods() { return local_methods; }
}  // namespace window_methods
