// What the window's opening calls and request-based calls return: rma._core.Epoch, a context
// manager whose exit makes the closing call (fence(NOSUCCEED), wait, complete, unlock(rank),
// unlock_all), and rma.Request, which completes one request-based call. Both call the window's
// own method bodies (window_calls), never back into Python.
#include <pybind11/pybind11.h>

#include "traced_call.hpp"
#include "window/window.hpp"
#include "window_object.hpp"

namespace py = pybind11;

namespace {

struct EpochObject {
  PyObject_HEAD
  PyObject* window;  // strong: `with rma.Window.allocate(...).fence():` keeps its window
  EpochKind kind;
  int rank;
};

struct RequestObject {
  PyObject_HEAD
  PyObject* window;
  PyObject* result;  // what wait() returns: the result array, or None
  int rank;
  bool done;
  uint64_t serial;  // RMA_CHECK's serial of its call (0: not checked)
};

WindowObject* window_of(PyObject* window) { return reinterpret_cast<WindowObject*>(window); }

PyObject* epoch_enter(PyObject* self, PyObject*) {
  PyObject* window = reinterpret_cast<EpochObject*>(self)->window;
  Py_INCREF(window);
  return window;
}

PyObject* epoch_exit(PyObject* self, PyObject* const*, Py_ssize_t) {
  auto* epoch = reinterpret_cast<EpochObject*>(self);
  WindowObject* window = window_of(epoch->window);
  bool ok = false;
  // (The with statement's closing call is the program's call, as if it had been written.)
  static const char* closers[] = {"fence", "wait", "complete", "unlock", "unlock_all"};
  TracedCall traced_call(closers[static_cast<int>(epoch->kind)], rma::trace::Kind::Call,
                         [window] { return static_cast<int64_t>(window->state->core->id()); });
  if (epoch->kind == EpochKind::Lock) TracedCall::note(window->state->core->job_rank(epoch->rank), 0);
  switch (epoch->kind) {
    case EpochKind::Fence: ok = window_calls::fence(window, rma::kModeNoSucceed); break;
    case EpochKind::Post: ok = window_calls::wait(window); break;
    case EpochKind::Start: ok = window_calls::complete(window); break;
    case EpochKind::Lock: ok = window_calls::unlock(window, epoch->rank); break;
    case EpochKind::LockAll: ok = window_calls::unlock_all(window); break;
  }
  if (!ok) return nullptr;
  Py_RETURN_FALSE;
}

PyObject* epoch_repr(PyObject* self) {
  static const char* names[] = {"fence", "post", "start", "lock", "lock_all"};
  auto* epoch = reinterpret_cast<EpochObject*>(self);
  return PyUnicode_FromFormat("<rma epoch of win.%s>", names[static_cast<int>(epoch->kind)]);
}

void epoch_dealloc(PyObject* self) {
  Py_XDECREF(reinterpret_cast<EpochObject*>(self)->window);
  Py_TYPE(self)->tp_free(self);
}

PyMethodDef epoch_methods[] = {
    {"__enter__", epoch_enter, METH_NOARGS, "Return the window."},
    {"__exit__", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&epoch_exit)), METH_FASTCALL,
     "Make the epoch's closing call (also when the block raised); never suppress the exception."},
    {nullptr, nullptr, 0, nullptr},
};

// A plain, final type: both kinds of object are made only here.
PyTypeObject simple_type(const char* name, const char* doc, Py_ssize_t size, destructor dealloc, reprfunc repr,
                         PyMethodDef* methods) {
  PyTypeObject t{PyVarObject_HEAD_INIT(nullptr, 0)};
  t.tp_name = name;
  t.tp_doc = doc;
  t.tp_basicsize = size;
  t.tp_flags = Py_TPFLAGS_DEFAULT;
  t.tp_dealloc = dealloc;
  t.tp_repr = repr;
  t.tp_methods = methods;
  return t;
}

PyTypeObject* epoch_type() {
  static PyTypeObject type =
      simple_type("rma._core.Epoch", "An open epoch: as a context manager, its exit makes the closing call.",
                  sizeof(EpochObject), epoch_dealloc, epoch_repr, epoch_methods);
  return &type;
}

PyObject* request_test(PyObject* self, PyObject*) {
  auto* request = reinterpret_cast<RequestObject*>(self);
  if (!request->done &&
      !window_calls::request_test(window_of(request->window), request->rank, request->serial, request->done)) {
    return nullptr;
  }
  return PyBool_FromLong(request->done);
}

PyObject* request_wait(PyObject* self, PyObject*) {
  auto* request = reinterpret_cast<RequestObject*>(self);
  if (!request->done) {
    if (!window_calls::request_wait(window_of(request->window), request->rank, request->serial)) return nullptr;
    request->done = true;
  }
  Py_INCREF(request->result);
  return request->result;
}

PyObject* request_repr(PyObject* self) {
  auto* request = reinterpret_cast<RequestObject*>(self);
  return PyUnicode_FromFormat("<rma.Request to rank %d, %s>", request->rank, request->done ? "done" : "pending");
}

void request_dealloc(PyObject* self) {
  auto* request = reinterpret_cast<RequestObject*>(self);
  Py_XDECREF(request->window);
  Py_XDECREF(request->result);
  Py_TYPE(self)->tp_free(self);
}

PyMethodDef request_methods[] = {
    {"test", request_test, METH_NOARGS,
     "test($self, /)\n--\n\nReturn True if the call has completed (at the origin and the target); never waits."},
    {"wait", request_wait, METH_NOARGS,
     "wait($self, /)\n--\n\nWait for the call to complete; return the result array of rget/rget_accumulate, else None."},
    {nullptr, nullptr, 0, nullptr},
};

PyTypeObject* request_type() {
  static PyTypeObject type =
      simple_type("rma.Request", "A request-based call (rput, rget, raccumulate, rget_accumulate) until it completes.",
                  sizeof(RequestObject), request_dealloc, request_repr, request_methods);
  return &type;
}

}  // namespace

PyObject* new_epoch(PyObject* window, EpochKind kind, int rank) {
  auto* epoch = PyObject_New(EpochObject, epoch_type());
  if (epoch == nullptr) return nullptr;
  Py_INCREF(window);
  epoch->window = window;
  epoch->kind = kind;
  epoch->rank = rank;
  return reinterpret_cast<PyObject*>(epoch);
}

PyObject* new_request(PyObject* window, int rank, PyObject* result, uint64_t serial) {
  auto* request = PyObject_New(RequestObject, request_type());
  if (request == nullptr) return nullptr;
  Py_INCREF(window);
  Py_INCREF(result);
  request->window = window;
  request->result = result;
  request->rank = rank;
  request->serial = serial;
  request->done = rank == rma::kProcNull;  // moves nothing
  return reinterpret_cast<PyObject*>(request);
}

void register_epoch_types(py::module_& m) {
  for (PyTypeObject* type : {epoch_type(), request_type()}) {
    if (PyType_Ready(type) < 0) throw py::error_already_set();
    Py_INCREF(type);
  }
  m.attr("Epoch") = py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(epoch_type()));
  m.attr("Request") = py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(request_type()));
}
