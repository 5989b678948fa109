// rma._core.FacadeWindow: the compiled base of the mpi4py facade's MPI.Win
// (python/rma/compat/win.py), for the common case of the calls programs make in loops.
//
// A Python method between MPI.Win's call and rma's (argument checks, the displacement's
// scaling, error translation) cost 0.1-0.4 us per call, over a budget of 0.1 us. So the data
// calls (Put, Get, Accumulate, Get_accumulate, Fetch_and_op, Compare_and_swap) and the
// synchronization calls whose arguments rma takes as they are (Lock, Unlock, Lock_all,
// Unlock_all, Fence, Complete, Wait, Test, the flushes, Sync) are compiled methods here. Given
// plain NumPy arrays, a displacement and positional arguments, one scales the displacement by
// the target's disp_unit (the windows underneath count bytes) and enters rma's call on the
// window underneath: rma._core.Window's own, directly, unless the window's kind has a method of
// its own for it. Anything else (buffer specifications, derived datatypes, keywords, a freed
// window) goes to the Python method of the same name with a leading underscore (`_Put`...),
// which handles every form. An error of rma's comes back through the Python method
// `_raise_as_mpi`, which raises it as MPI.Exception.
//
// So the fast path serves every kind of window the job's settings make (RMA_CHECK's,
// RMA_MODEL=separate's, facade_route.hpp), and a bug of its own shows whatever the settings.
//
// The object holds what the fast path reads, set by win.py: `_win`, the rma.Window underneath
// (with its route, found as it is set), and (`_set_scale`) the bytes per displacement unit of
// each target rank. `_byte_disp` turns a displacement into bytes for the Python path too, so
// that the rule lives here alone.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>
#include <string_view>
#include <vector>

#include "facade_route.hpp"
#include "method_object.hpp"
#include "parameters.hpp"

namespace py = pybind11;

namespace {

using facade_route::Call;
using facade_route::general;
using parameters::Parameter;
using parameters::Parameters;
// A call's arguments in the order of its parameters (null: not given).
using Slots = std::array<PyObject*, parameters::kMostParameters>;

struct FacadeObject {
  PyObject_HEAD
  PyObject* window;             // rma.Window (or the facade's stand-in for a freed window)
  facade_route::Route route;    // where the calls to `window` go
  std::vector<int64_t>* scale;  // bytes per displacement unit, by rank; none: byte displacements
};

// MPI's lock types (ints) and the rma.LockType each stands for (_set_lock_types).
struct LockType {
  long mpi;
  PyObject* rma;
};
std::array<LockType, 2> lock_types{};

PyObject* name_rma_op;        // "_rma": the rma.Op a facade MPI.Op stands for (None: not one windows take)
PyObject* name_raise_as_mpi;  // "_raise_as_mpi"

FacadeObject* as_facade(PyObject* self) { return reinterpret_cast<FacadeObject*>(self); }

bool plain_array(PyObject* value) { return Py_TYPE(value) == py::detail::npy_api::get().PyArray_Type_; }

Py_ssize_t elements(PyObject* array) {
  const auto* proxy = py::detail::array_proxy(array);
  Py_ssize_t count = 1;
  for (int i = 0; i < proxy->nd; ++i) count *= proxy->dimensions[i];
  return count;
}

// As many elements as `other`, of the same dtype object: what an origin and its result hold
// on the fast path (the Python path gives the errors of every other case).
bool alike(PyObject* array, PyObject* other) {
  return py::detail::array_proxy(array)->descr == py::detail::array_proxy(other)->descr &&
         elements(array) == elements(other);
}

// One element, of the same dtype object as `other`: what the atomic calls take.
bool single(PyObject* array, PyObject* other) { return elements(other) == 1 && alike(array, other); }

bool c_contiguous(PyObject* array) {
  return (py::detail::array_proxy(array)->flags & py::detail::npy_api::NPY_ARRAY_C_CONTIGUOUS_) != 0;
}

// Bytes per displacement unit at `rank` (1 where displacements are bytes already: a dynamic
// window, PROC_NULL, or a rank that does not exist, which rma's call then names).
int64_t unit_at(FacadeObject* self, PyObject* rank) {
  if (self->scale == nullptr || !PyLong_CheckExact(rank)) return 1;
  long index = PyLong_AsLong(rank);
  if (index < 0 || static_cast<size_t>(index) >= self->scale->size()) {
    PyErr_Clear();
    return 1;
  }
  return (*self->scale)[index];
}

// The byte displacement of `target` (None or an int, in the target's unit), as a new
// reference; null (no error set) when it is something else or does not fit: the Python path
// then gives the error.
PyObject* byte_displacement(FacadeObject* self, PyObject* rank, PyObject* target) {
  if (target == nullptr || target == Py_None) return PyLong_FromLong(0);
  if (!PyLong_CheckExact(target)) return nullptr;
  int64_t unit = unit_at(self, rank);
  if (unit == 1) return Py_NewRef(target);
  int overflow = 0;
  long long displacement = PyLong_AsLongLongAndOverflow(target, &overflow);
  long long scaled = 0;
  if (overflow != 0 || __builtin_mul_overflow(displacement, unit, &scaled)) return nullptr;
  return PyLong_FromLongLong(scaled);
}

// Runs rma's call on the window underneath (served: see `served`); its error becomes
// MPI.Exception through the Python side.
PyObject* enter(PyObject* self, Call call, PyObject* const* args, Py_ssize_t nargs) {
  FacadeObject* facade = as_facade(self);
  PyObject* result = facade_route::run(facade->window, facade->route, call, args, nargs);
  if (result != nullptr) return result;
  PyObject *type, *value, *traceback;
  PyErr_Fetch(&type, &value, &traceback);
  PyErr_NormalizeException(&type, &value, &traceback);
  if (traceback != nullptr) PyException_SetTraceback(value, traceback);
  Py_XDECREF(type);
  Py_XDECREF(traceback);
  PyObject* raised = PyObject_CallMethodOneArg(self, name_raise_as_mpi, value);
  Py_DECREF(value);
  Py_XDECREF(raised);
  return nullptr;  // (_raise_as_mpi always raises)
}

// Whether the fast path serves the window underneath: an rma.Window of any kind, not the
// stand-in of a freed window.
bool served(PyObject* self) { return as_facade(self)->route.served; }

// ---- the calls, in mpi4py's argument order ----

// A call's arguments by position, its keywords put in their places (null: not given). False
// (the Python path then gives Python's own error) for a keyword the call does not have, an
// argument given twice, or more than the call takes.
bool by_position(PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames, const Parameters& parameters,
                 Slots& slots) {
  if (nargs > parameters.count) return false;
  slots.fill(nullptr);
  std::copy(args, args + nargs, slots.begin());
  Py_ssize_t keywords = kwnames != nullptr ? PyTuple_GET_SIZE(kwnames) : 0;
  for (Py_ssize_t k = 0; k < keywords; ++k) {
    PyObject* keyword = PyTuple_GET_ITEM(kwnames, k);
    int at = 0;
    while (at < parameters.count && PyUnicode_CompareWithASCIIString(keyword, parameters.names[at]) != 0) ++at;
    if (at == parameters.count || slots[at] != nullptr) return false;
    slots[at] = args[nargs + k];
  }
  return true;
}

// The data calls take (buffers..., target_rank, target, op) where rma's take (buffers...,
// target_rank, byte displacement, op): `rank_at` is where target_rank stands, and an op, where
// the call has one, follows the target. `plain` says whether the buffers (every argument before
// the rank is given) are what the fast path takes.
template <class Plain>
PyObject* data_call(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames, Call call,
                    const char* general_name, const Parameters& parameters, Plain plain) {
  const bool has_op = std::string_view(parameters.names[parameters.count - 1]) == "op";
  const Py_ssize_t rank_at = parameters.count - (has_op ? 3 : 2);
  const Py_ssize_t op_at = rank_at + 2;
  Slots slot;
  if (served(self) && by_position(args, nargs, kwnames, parameters, slot) &&
      std::all_of(slot.begin(), slot.begin() + rank_at + 1, [](PyObject* given) { return given != nullptr; }) &&
      plain(slot.data())) {
    PyObject* op = nullptr;  // (not given: rma's default, SUM, which is MPI's too)
    if (has_op && slot[op_at] != nullptr) {
      op = PyObject_GetAttr(slot[op_at], name_rma_op);
      if (op == nullptr) PyErr_Clear();
    }
    PyObject* disp = has_op && slot[op_at] != nullptr && (op == nullptr || op == Py_None)
                         ? nullptr  // (not an op that windows take: the Python path says so)
                         : byte_displacement(as_facade(self), slot[rank_at], slot[rank_at + 1]);
    if (disp != nullptr) {
      std::array<PyObject*, 6> own{};
      std::copy(slot.begin(), slot.begin() + rank_at + 1, own.begin());
      own[rank_at + 1] = disp;
      own[op_at] = op;
      PyObject* result = enter(self, call, own.data(), op != nullptr ? op_at + 1 : op_at);
      Py_DECREF(disp);
      Py_XDECREF(op);
      return result;
    }
    Py_XDECREF(op);
  }
  return general(self, general_name, args, nargs, kwnames);
}

// mpi4py's parameters of each call (parameters.hpp: their signatures too; the Python methods
// `_Put`... take the same, tests/test_signatures.py). A default names the facade's constant.
constexpr Parameter kOrigin{"origin"}, kResult{"result"}, kTargetRank{"target_rank"}, kTarget{"target", "None"},
    kOp{"op", "rma.compat.MPI.SUM"}, kTargetDisp{"target_disp", "0"}, kRank{"rank"}, kAssertion{"assertion", "0"};
constexpr Parameters kPut{"Put", {kOrigin, kTargetRank, kTarget}, 3};
constexpr Parameters kGet{"Get", {kOrigin, kTargetRank, kTarget}, 3};
constexpr Parameters kAccumulate{"Accumulate", {kOrigin, kTargetRank, kTarget, kOp}, 4};
constexpr Parameters kGetAccumulate{"Get_accumulate", {kOrigin, kResult, kTargetRank, kTarget, kOp}, 5};
constexpr Parameters kFetchAndOp{"Fetch_and_op", {kOrigin, kResult, kTargetRank, kTargetDisp, kOp}, 5};
constexpr Parameters kCompareAndSwap{"Compare_and_swap", {kOrigin, {"compare"}, kResult, kTargetRank, kTargetDisp}, 5};
constexpr Parameters kLock{"Lock", {kRank, {"lock_type", "rma.compat.MPI.LOCK_EXCLUSIVE"}, kAssertion}, 3};

// Put(origin, target_rank, target=None)
PyObject* Put(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  return data_call(self, args, nargs, kwnames, facade_route::kPut, "_Put", kPut,
                   [](PyObject* const* a) { return plain_array(a[0]); });
}

// Get(origin, target_rank, target=None): into a C-contiguous array only (rma would copy into
// any other through a stand-in; the Python path decides what MPI allows).
PyObject* Get(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  return data_call(self, args, nargs, kwnames, facade_route::kGet, "_Get", kGet,
                   [](PyObject* const* a) { return plain_array(a[0]) && c_contiguous(a[0]); });
}

// Accumulate(origin, target_rank, target=None, op=SUM)
PyObject* Accumulate(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  return data_call(self, args, nargs, kwnames, facade_route::kAccumulate, "_Accumulate", kAccumulate,
                   [](PyObject* const* a) { return plain_array(a[0]); });
}

// Get_accumulate(origin, result, target_rank, target=None, op=SUM)
PyObject* Get_accumulate(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  return data_call(self, args, nargs, kwnames, facade_route::kGetAccumulate, "_Get_accumulate", kGetAccumulate,
                   [](PyObject* const* a) {
                     return plain_array(a[0]) && plain_array(a[1]) && c_contiguous(a[1]) && alike(a[0], a[1]);
                   });
}

// Fetch_and_op(origin, result, target_rank, target_disp=0, op=SUM)
PyObject* Fetch_and_op(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  return data_call(self, args, nargs, kwnames, facade_route::kFetchAndOp, "_Fetch_and_op", kFetchAndOp,
                   [](PyObject* const* a) { return plain_array(a[0]) && plain_array(a[1]) && single(a[0], a[1]); });
}

// Compare_and_swap(origin, compare, result, target_rank, target_disp=0)
PyObject* Compare_and_swap(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  return data_call(self, args, nargs, kwnames, facade_route::kCompareAndSwap, "_Compare_and_swap", kCompareAndSwap,
                   [](PyObject* const* a) {
                     return plain_array(a[0]) && plain_array(a[1]) && plain_array(a[2]) && single(a[0], a[2]) &&
                            single(a[1], a[2]);
                   });
}

// Lock(rank, lock_type=MPI.LOCK_EXCLUSIVE, assertion=0): rma's lock(rank, LockType, mode).
PyObject* Lock(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  Slots slot;
  if (served(self) && by_position(args, nargs, kwnames, kLock, slot) && slot[0] != nullptr &&
      lock_types[0].rma != nullptr) {
    PyObject* type = lock_types[0].rma;  // (MPI's default: exclusive)
    if (slot[1] != nullptr) {
      long mpi = PyLong_CheckExact(slot[1]) ? PyLong_AsLong(slot[1]) : -1;
      PyErr_Clear();
      type = mpi == lock_types[0].mpi ? lock_types[0].rma : mpi == lock_types[1].mpi ? lock_types[1].rma : nullptr;
    }
    if (type != nullptr) {
      PyObject* own[3] = {slot[0], type, slot[2]};
      PyObject* epoch = enter(self, facade_route::kLock, own, slot[2] != nullptr ? 3 : 2);
      if (epoch == nullptr) return nullptr;
      Py_DECREF(epoch);  // (rma's lock returns the epoch for `with`; MPI's returns nothing)
      Py_RETURN_NONE;
    }
  }
  return general(self, "_Lock", args, nargs, kwnames);
}

// The synchronization calls whose arguments rma takes as they are (MPI's assertion is rma's
// mode): each enters rma's call of the same meaning, and returns what MPI's returns.
enum class Returns { Nothing, True, Same };
struct Forward {
  Parameters parameters;  // mpi4py's (its name, its signature)
  const char* general;    // the Python method for every other case
  Call own;               // rma's call
  Returns returns;
};
constexpr Forward kFence{{"Fence", {kAssertion}, 1}, "_Fence", facade_route::kFence, Returns::Nothing};
constexpr Forward kComplete{{"Complete", {}, 0}, "_Complete", facade_route::kComplete, Returns::Nothing};
constexpr Forward kWait{{"Wait", {}, 0}, "_Wait", facade_route::kWait, Returns::True};
constexpr Forward kTest{{"Test", {}, 0}, "_Test", facade_route::kTest, Returns::Same};
constexpr Forward kUnlock{{"Unlock", {kRank}, 1}, "_Unlock", facade_route::kUnlock, Returns::Nothing};
constexpr Forward kLockAll{{"Lock_all", {kAssertion}, 1}, "_Lock_all", facade_route::kLockAll, Returns::Nothing};
constexpr Forward kUnlockAll{{"Unlock_all", {}, 0}, "_Unlock_all", facade_route::kUnlockAll, Returns::Nothing};
constexpr Forward kFlush{{"Flush", {kRank}, 1}, "_Flush", facade_route::kFlush, Returns::Nothing};
constexpr Forward kFlushAll{{"Flush_all", {}, 0}, "_Flush_all", facade_route::kFlushAll, Returns::Nothing};
constexpr Forward kFlushLocal{{"Flush_local", {kRank}, 1}, "_Flush_local", facade_route::kFlushLocal, Returns::Nothing};
constexpr Forward kFlushLocalAll{
    {"Flush_local_all", {}, 0}, "_Flush_local_all", facade_route::kFlushLocalAll, Returns::Nothing};
constexpr Forward kSync{{"Sync", {}, 0}, "_Sync", facade_route::kSync, Returns::Nothing};

template <const Forward& F>
PyObject* forward(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  if (kwnames != nullptr || !served(self)) return general(self, F.general, args, nargs, kwnames);
  PyObject* result = enter(self, F.own, args, nargs);
  if (result == nullptr || F.returns == Returns::Same) return result;
  Py_DECREF(result);
  if (F.returns == Returns::True) Py_RETURN_TRUE;
  Py_RETURN_NONE;
}

const MethodSpec methods[] = {
    {kPut, Put,
     "Put origin's data into target_rank's window (MPI_Put); target: a displacement in its disp_unit,\n"
     "(disp, count) or (disp, count, datatype)."},
    {kGet, Get, "Get data of target_rank's window into origin (MPI_Get)."},
    {kAccumulate, Accumulate, "Combine origin's data into target_rank's window with op (MPI_Accumulate)."},
    {kGetAccumulate, Get_accumulate,
     "Fetch target_rank's data into result, then combine origin's into it (MPI_Get_accumulate)."},
    {kFetchAndOp, Fetch_and_op,
     "Fetch one element into result and combine origin's into it, atomically (MPI_Fetch_and_op)."},
    {kCompareAndSwap, Compare_and_swap,
     "Fetch one element into result; replace it by origin's if it equals compare's (MPI_Compare_and_swap)."},
    {kLock, Lock, "Start a passive-target epoch at rank (MPI_Win_lock)."},
    {kFence.parameters, forward<kFence>, "End one fence epoch and start the next (MPI_Win_fence)."},
    {kComplete.parameters, forward<kComplete>, "End the access epoch that Start began (MPI_Win_complete)."},
    {kWait.parameters, forward<kWait>,
     "End the exposure epoch that Post began, once its origins completed (MPI_Win_wait)."},
    {kTest.parameters, forward<kTest>, "End the exposure epoch if its origins completed; say whether (MPI_Win_test)."},
    {kUnlock.parameters, forward<kUnlock>, "End the passive-target epoch at rank (MPI_Win_unlock)."},
    {kLockAll.parameters, forward<kLockAll>, "Start a shared passive-target epoch at every rank (MPI_Win_lock_all)."},
    {kUnlockAll.parameters, forward<kUnlockAll>, "End the epoch that Lock_all began (MPI_Win_unlock_all)."},
    {kFlush.parameters, forward<kFlush>, "Complete every call to rank, there and here (MPI_Win_flush)."},
    {kFlushAll.parameters, forward<kFlushAll>, "Complete every call to every rank (MPI_Win_flush_all)."},
    {kFlushLocal.parameters, forward<kFlushLocal>,
     "Complete every call to rank here: its buffers are free (MPI_Win_flush_local)."},
    {kFlushLocalAll.parameters, forward<kFlushLocalAll>, "Flush_local to every rank (MPI_Win_flush_local_all)."},
    {kSync.parameters, forward<kSync>, "Synchronize the public and private copies of the window (MPI_Win_sync)."},
};

PyObject* get_window(PyObject* self, void*) {
  PyObject* window = as_facade(self)->window;
  return Py_NewRef(window != nullptr ? window : Py_None);
}

// Setting `_win` finds the window's route.
int set_window(PyObject* self, PyObject* window, void*) {
  facade_route::Route route;
  if (window != nullptr && !facade_route::route_of(window, route)) return -1;
  FacadeObject* facade = as_facade(self);
  PyObject* old = facade->window;
  facade->window = Py_XNewRef(window);
  facade->route = route;
  Py_XDECREF(old);  // (last: it may run Python, which finds the window and its route agreeing)
  return 0;
}

PyGetSetDef window_attribute[] = {
    {"_win", get_window, set_window, "the rma.Window underneath", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

PyObject* set_scale(PyObject* self, PyObject* units) {
  std::vector<int64_t> scale;
  try {
    scale = py::cast<std::vector<int64_t>>(py::handle(units));
  } catch (py::error_already_set& error) {
    error.restore();
    return nullptr;
  } catch (const py::cast_error&) {
    PyErr_SetString(PyExc_TypeError, "FacadeWindow._set_scale takes a list of ints");
    return nullptr;
  }
  delete as_facade(self)->scale;
  as_facade(self)->scale = scale.empty() ? nullptr : new std::vector<int64_t>(std::move(scale));
  Py_RETURN_NONE;
}

PyObject* byte_disp(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 2) {
    PyErr_SetString(PyExc_TypeError, "FacadeWindow._byte_disp takes (rank, disp)");
    return nullptr;
  }
  if (args[1] == Py_None) return PyLong_FromLong(0);
  PyObject* disp = PyNumber_Index(args[1]);
  if (disp == nullptr) return nullptr;
  PyObject* unit = PyLong_FromLongLong(unit_at(as_facade(self), args[0]));
  PyObject* bytes = unit != nullptr ? PyNumber_Multiply(disp, unit) : nullptr;
  Py_DECREF(disp);
  Py_XDECREF(unit);
  return bytes;
}

// _set_lock_types(exclusive, rma_exclusive, shared, rma_shared): once, from win.py.
PyObject* set_lock_types(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 4) {
    PyErr_SetString(PyExc_TypeError, "FacadeWindow._set_lock_types takes 4 arguments");
    return nullptr;
  }
  for (int i = 0; i < 2; ++i) {
    long mpi = PyLong_AsLong(args[2 * i]);
    if (mpi == -1 && PyErr_Occurred()) return nullptr;
    Py_XSETREF(lock_types[i].rma, Py_NewRef(args[2 * i + 1]));
    lock_types[i].mpi = mpi;
  }
  Py_RETURN_NONE;
}

PyMethodDef plain_methods[] = {
    {"_set_lock_types", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(set_lock_types)),
     METH_FASTCALL | METH_STATIC, "_set_lock_types(exclusive, rma_exclusive, shared, rma_shared): MPI's lock types."},
    {"_set_scale", set_scale, METH_O,
     "Set the bytes per displacement unit of each rank (a list; empty: displacements are bytes)."},
    {"_byte_disp", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(byte_disp)), METH_FASTCALL,
     "_byte_disp(rank, disp): the bytes the window underneath counts for a displacement in rank's unit."},
    {nullptr, nullptr, 0, nullptr},
};

int traverse(PyObject* self, visitproc visit, void* arg) {
  Py_VISIT(as_facade(self)->window);
  return 0;
}

int clear(PyObject* self) {
  Py_CLEAR(as_facade(self)->window);
  as_facade(self)->route = facade_route::Route{};
  return 0;
}

void dealloc(PyObject* self) {
  PyObject_GC_UnTrack(self);
  clear(self);
  delete as_facade(self)->scale;
  Py_TYPE(self)->tp_free(self);
}

PyTypeObject* facade_type() {
  static PyTypeObject type = [] {
    PyTypeObject t{PyVarObject_HEAD_INIT(nullptr, 0)};
    t.tp_name = "rma._core.FacadeWindow";
    t.tp_doc = "The compiled part of rma.compat's MPI.Win: the common case of its calls.";
    t.tp_basicsize = sizeof(FacadeObject);
    t.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC;
    t.tp_new = PyType_GenericNew;
    t.tp_dealloc = dealloc;
    t.tp_traverse = traverse;
    t.tp_clear = clear;
    t.tp_getset = window_attribute;
    t.tp_methods = plain_methods;
    return t;
  }();
  return &type;
}

}  // namespace

// After register_window_type: the fast path enters rma._core.Window's calls.
void register_facade_window(py::module_& m) {
  facade_route::start(m.attr("Window").ptr());  // (throws here, at import, if rma's window lost a call)
  name_rma_op = PyUnicode_InternFromString("_rma");
  name_raise_as_mpi = PyUnicode_InternFromString("_raise_as_mpi");
  if (PyType_Ready(facade_type()) < 0) throw py::error_already_set();
  Py_INCREF(facade_type());
  for (const MethodSpec& spec : methods) add_method(facade_type(), spec);
  m.attr("FacadeWindow") = py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(facade_type()));
}
