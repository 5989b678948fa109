// rma._core.Window, the type: every window call from Python enters here once (window_methods.hpp
// says how a method runs). This file owns the type object and the life of the state it holds:
// tp_new (the state of a window made collectively), _check_start (RMA_CHECK on), free (the
// memory and the buffers go), tp_dealloc (a window dropped without free() stays until the
// process ends), _held_count, and the assembly of the type's methods from the files that hold
// them: window_epoch_calls.cpp (fence, PSCW, locks, flushes; the epochs' and requests' closing
// calls), window_data_calls.cpp (the communication calls), window_local_calls.cpp (wait_until,
// attach/detach).
#include "window_object.hpp"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "constants.hpp"
#include "runtime/communicator.hpp"
#include "window_docs.hpp"
#include "window_methods.hpp"

namespace py = pybind11;

using namespace window_methods;

namespace {

using arguments::Parameters;

#define RMA_NO_PARAMETERS(name) constexpr Parameters k_##name{#name, {}, 0};
RMA_NO_PARAMETERS(free)
RMA_NO_PARAMETERS(_held_count)
#undef RMA_NO_PARAMETERS
constexpr Parameters kCheckStart{"_check_start", {{"comm"}, {"world"}, {"name"}, {"board"}}, 4};

// _check_start(comm, world, name, board): RMA_CHECK on for this window
// (rma.check.window.CheckedWindow); board: the core of its clock board (check/window_checker.hpp).
PyObject* check_start(WindowObject* self, PyObject** slot) {
  auto comm = py::cast<std::shared_ptr<rma::Communicator>>(py::handle(slot[0]));
  auto world = py::cast<std::vector<int>>(py::handle(slot[1]));
  auto name = py::cast<std::string>(py::handle(slot[2]));
  auto board = py::cast<std::shared_ptr<rma::Window>>(py::handle(slot[3]));
  auto checker = std::make_shared<rma::check::WindowChecker>(check_support::process_clock(), std::move(comm),
                                                             std::move(world), std::move(name), std::move(board));
  state_of(self).check = std::make_shared<CheckState>(std::move(checker));
  return py::cast(state_of(self).check).release().ptr();
}

PyObject* free_window(WindowObject* self) {
  check_open(self, "free");
  released([&] { core_of(self).free(); });
  state_of(self).held.drop_all();
  state_of(self).attached.clear();
  return none();
}

PyObject* held_count(WindowObject* self) { return PyLong_FromSize_t(state_of(self).held.count()); }

#define RMA_METHOD(parameters, body, doc) {parameters, &method<parameters, body>, doc}
#define RMA_METHOD0(name, body, doc) {k_##name, &method0<k_##name, body>, doc}

const MethodSpec lifetime_methods[] = {
    RMA_METHOD0(free, free_window, window_docs::free),
    RMA_METHOD(kCheckStart, check_start, "Turn RMA_CHECK on for this window; return its _core.WindowCheck."),
    RMA_METHOD0(_held_count, held_count, "Return how many buffers the window keeps for calls not yet complete."),
};

#undef RMA_METHOD
#undef RMA_METHOD0

// _core.Window.__new__(cls, core, targets, owner, no_locks, dynamic): rma.Window's
// constructors call it once the collective creation is done. targets: per rank, (dtype,
// disp_unit in bytes, raw).
PyObject* window_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  PyObject *core, *targets, *owner;
  int no_locks = 0, dynamic = 0;
  static const char* names[] = {"core", "targets", "owner", "no_locks", "dynamic", nullptr};
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOO|pp:Window", const_cast<char**>(names), &core, &targets, &owner,
                                   &no_locks, &dynamic)) {
    PyErr_Clear();
    PyErr_SetString(PyExc_TypeError,
                    "use rma.Window.allocate(...), rma.Window.create(...) or rma.Window.create_dynamic(...)");
    return nullptr;
  }
  auto made = guarded([&]() -> PyObject* {
    auto state = std::make_unique<WindowState>(WindowState{py::cast<std::shared_ptr<rma::Window>>(py::handle(core)),
                                                           {},
                                                           py::reinterpret_borrow<py::object>(owner),
                                                           KeepAlive(0),
                                                           {},
                                                           no_locks != 0,
                                                           dynamic != 0});
    for (py::handle entry : py::reinterpret_borrow<py::list>(targets)) {
      auto item = entry.cast<py::tuple>();
      py::object dtype = item[0];
      rma::ElementType element = constants::element_type_of(dtype.ptr());
      uint64_t itemsize = py::reinterpret_borrow<py::dtype>(dtype).itemsize();
      state->targets.push_back({dtype, element, itemsize, item[1].cast<uint64_t>(), item[2].cast<bool>()});
    }
    state->held = KeepAlive(static_cast<int>(state->targets.size()));
    PyObject* self = type->tp_alloc(type, 0);
    if (self == nullptr) return nullptr;
    reinterpret_cast<WindowObject*>(self)->state = state.release();
    return self;
  });
  return made;
}

// Windows dropped without free(): a window is collective to free, so the other ranks may still
// put into this rank's memory. It stays (with its registration and the arrays the window
// kept) until the process ends, rather than going back to the allocator under their puts.
// So does a window whose calls were never completed by a synchronization (its keep-alive
// still holds their arrays), exposed or not: once the runtime is finalized (after an uncaught
// exception, rma.finalize() with a window in use) nothing can complete them any more, yet a
// peer may still be reading an origin (the shm provider's target copies a large put out of the
// origin's memory when it gets to it) or answering into a result.
std::vector<std::unique_ptr<WindowState>>& dropped_windows() {
  static auto* dropped = new std::vector<std::unique_ptr<WindowState>>();  // never destroyed: the process ends
  return *dropped;
}

void window_dealloc(PyObject* self) {
  std::unique_ptr<WindowState> state(reinterpret_cast<WindowObject*>(self)->state);
  bool exposed = state && state->core->exposed();
  size_t in_flight = state ? state->held.count() : 0;  // arrays of calls not completed
  if (exposed || in_flight > 0) {
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);  // (a dealloc may run while an exception is set)
    std::string text = "rma: " + state->core->label() + " on rank " + std::to_string(state->core->rank()) +
                       " was dropped without free(): " +
                       (exposed ? "its memory stays exposed to the other ranks until the job ends (free() is "
                                  "collective; call it on every rank)"
                                : std::to_string(in_flight) +
                                      " array(s) of its calls that no synchronization completed stay until the "
                                      "process ends");
    // (Not WriteUnraisable(self): its repr would touch the half-destroyed object.)
    if (PyErr_WarnEx(PyExc_ResourceWarning, text.c_str(), 1) < 0) PyErr_WriteUnraisable(nullptr);
    PyErr_Restore(type, value, traceback);
    dropped_windows().push_back(std::move(state));
  }
  Py_TYPE(self)->tp_free(self);
}

PyTypeObject* window_type() {
  static PyTypeObject type =
      compiled_type("rma._core.Window", "The compiled part of rma.Window: its communication and synchronization calls.",
                    sizeof(WindowObject), Py_TPFLAGS_BASETYPE, window_new, window_dealloc);
  return &type;
}

}  // namespace

void register_window_type(py::module_& m) {
  if (PyType_Ready(window_type()) < 0) throw py::error_already_set();
  Py_INCREF(window_type());
  for (auto methods : {epoch_call_methods(), std::span<const MethodSpec>(lifetime_methods), local_call_methods(),
                       data_call_methods()}) {
    for (const MethodSpec& spec : methods) add_method(window_type(), spec);
  }
  m.attr("Window") = py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(window_type()));
  register_epoch_types(m);
}
