// rma._core.Window: every window call from Python enters here once (window_methods.hpp says
// how a method runs). This file holds the type, its synchronization methods (fence, PSCW,
// locks, flushes, free), dynamic windows' attach/detach, and the closing calls of epochs and
// requests; window_data_calls.cpp holds the communication calls.
#include "window_object.hpp"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <utility>

#include "constants.hpp"
#include "runtime/communicator.hpp"
#include "window_docs.hpp"
#include "window_methods.hpp"

namespace py = pybind11;

using namespace window_methods;

namespace {

using arguments::Parameters;

constexpr int kEveryTarget = -1;

// A synchronization call of the core (GIL released); then the buffers of the calls it completed
// are finished: those to `completed` (a rank), to every target (kEveryTarget), or none
// (kProcNull). False with a Python error set if it failed.
template <class Core>
bool synchronize(WindowObject* self, const char* call, int completed, Core&& core_call) {
  return guarded([&]() -> PyObject* {
           check_open(self, call);
           released(core_call);
           if (completed == kEveryTarget) {
             state_of(self).held.finish_all();
           } else if (completed >= 0) {
             state_of(self).held.finish(completed);
           }
           return Py_None;
         }) != nullptr;
}

long mode_of(PyObject* value, const char* call) {
  long flags = 0;
  if (value != nullptr && !constants::mode_of(value, flags)) {
    throw rma::ArgumentTypeError(std::string("rma: win.") + call + ": mode must be rma.Mode flags or 0, not " +
                                 Py_TYPE(value)->tp_name);
  }
  return flags;
}

constexpr Parameters kMode{"fence", {"mode"}, 1, 0, 1};
constexpr Parameters kLockAllMode{"lock_all", {"mode"}, 1, 0, 1};
constexpr Parameters kPost{"post", {"group", "mode"}, 2, 1, 2};
constexpr Parameters kStart{"start", {"group", "mode"}, 2, 1, 2};
constexpr Parameters kLock{"lock", {"rank", "lock_type", "mode"}, 3, 1, 3};
constexpr Parameters kTryLock{"_try_lock", {"rank", "lock_type"}, 2, 2, 2};
constexpr Parameters kUnlock{"unlock", {"rank"}, 1, 1, 1};
constexpr Parameters kFlush{"flush", {"rank"}, 1, 1, 1};
constexpr Parameters kFlushLocal{"flush_local", {"rank"}, 1, 1, 1};
#define RMA_NO_PARAMETERS(name) constexpr Parameters k_##name{#name, {}, 0, 0, 0};
RMA_NO_PARAMETERS(complete)
RMA_NO_PARAMETERS(wait)
RMA_NO_PARAMETERS(test)
RMA_NO_PARAMETERS(unlock_all)
RMA_NO_PARAMETERS(flush_all)
RMA_NO_PARAMETERS(flush_local_all)
RMA_NO_PARAMETERS(sync)
RMA_NO_PARAMETERS(free)
RMA_NO_PARAMETERS(_held_count)
#undef RMA_NO_PARAMETERS
constexpr Parameters kWaitUntil{"wait_until", {"index", "cmp", "value", "timeout"}, 4, 3, 3};
constexpr Parameters kAttach{"attach", {"array"}, 1, 1, 1};
constexpr Parameters kCheckStart{"_check_start", {"comm", "world", "name", "board"}, 4, 4, 4};
constexpr Parameters kDetach{"detach", {"array"}, 1, 1, 1};

// ---- synchronization ----

std::vector<int> group_of(PyObject* value, const char* call) {
  std::vector<int> ranks;
  py::object items;
  if (PyList_CheckExact(value) || PyTuple_CheckExact(value)) {
    items = py::reinterpret_borrow<py::object>(value);
  } else {
    PyObject* members = PyObject_GetAttrString(value, "ranks");  // an rma.Group
    if (members == nullptr) {
      PyErr_Clear();
      members = PySequence_List(value);  // any iterable of ranks
      if (members == nullptr) {
        PyErr_Clear();
        throw rma::ArgumentTypeError(std::string("rma: win.") + call +
                                     ": group must be an rma.Group or an iterable of ranks, not " +
                                     Py_TYPE(value)->tp_name);
      }
    }
    items = py::reinterpret_steal<py::object>(members);
  }
  py::object sequence = py::reinterpret_steal<py::object>(PySequence_Fast(items.ptr(), "group"));
  if (!sequence) throw py::error_already_set();
  Py_ssize_t count = PySequence_Fast_GET_SIZE(sequence.ptr());
  PyObject** item = PySequence_Fast_ITEMS(sequence.ptr());
  ranks.reserve(static_cast<size_t>(count));
  for (Py_ssize_t i = 0; i < count; ++i) {
    int64_t rank = arguments::integer(item[i], call, "a rank of the group");
    if (rank < std::numeric_limits<int>::min() || rank > std::numeric_limits<int>::max())
      rank = -1;  // the core refuses it
    ranks.push_back(static_cast<int>(rank));
  }
  return ranks;
}

// RMA_CHECK: a synchronization call's step on a checked window, once the plain call returned.
// False with the Python error set.
template <class Step>
bool checked_step(WindowObject* self, Step&& step) {
  CheckState* check = state_of(self).check.get();
  if (check == nullptr) return true;
  return guarded([&]() -> PyObject* {
           step(*check);
           return Py_None;
         }) != nullptr;
}

PyObject* fence(WindowObject* self, PyObject** slot) {
  check_open(self, "fence");
  if (!window_calls::fence(self, mode_of(slot[0], "fence"))) return nullptr;
  return new_epoch(reinterpret_cast<PyObject*>(self), EpochKind::Fence, 0);
}

// post and start: (group, mode), the core's call, and the epoch object whose exit closes it.
PyObject* group_epoch(WindowObject* self, PyObject** slot, const char* call, EpochKind kind,
                      void (rma::Window::*open)(const std::vector<int>&, int)) {
  check_open(self, call);
  std::vector<int> group = group_of(slot[0], call);
  long mode = mode_of(slot[1], call);
  if (CheckState* check = state_of(self).check.get(); check != nullptr && kind == EpochKind::Post) check->posting();
  released([&] { (core_of(self).*open)(group, static_cast<int>(mode)); });
  if (CheckState* check = state_of(self).check.get()) {
    if (kind == EpochKind::Post) {
      check->posted();
    } else {
      check->started(group);
    }
  }
  return new_epoch(reinterpret_cast<PyObject*>(self), kind, 0);
}

PyObject* post(WindowObject* self, PyObject** slot) {
  return group_epoch(self, slot, "post", EpochKind::Post, &rma::Window::post);
}

PyObject* start(WindowObject* self, PyObject** slot) {
  return group_epoch(self, slot, "start", EpochKind::Start, &rma::Window::start);
}

PyObject* complete(WindowObject* self) { return window_calls::complete(self) ? none() : nullptr; }
PyObject* wait(WindowObject* self) { return window_calls::wait(self) ? none() : nullptr; }

PyObject* test(WindowObject* self) {
  check_open(self, "test");
  bool done = false;
  released([&] { done = core_of(self).test(); });
  if (done && !checked_step(self, [](CheckState& check) { check.waited(); })) return nullptr;
  return PyBool_FromLong(done);
}

int lock_type_of(PyObject* value, const char* call) {
  int type = rma::kLockExclusive;
  if (value != nullptr && !constants::lock_type_of(value, type)) {
    throw rma::ArgumentTypeError(std::string("rma: win.") + call +
                                 ": lock_type must be rma.LOCK_EXCLUSIVE or rma.LOCK_SHARED, not " +
                                 Py_TYPE(value)->tp_name);
  }
  return type;
}

void check_locks(WindowObject* self, const char* call) {
  if (state_of(self).no_locks) {
    throw rma::EpochError("rma: " + core_of(self).where(call, -1) +
                          ": this window was created with info={'no_locks': True}");
  }
}

// Called as a lock call returns granted: a SIGINT that came meanwhile (with the grant, or while
// the call was taking the GIL back) is Python's to handle now, not at the caller's next line. If
// its handler raises (KeyboardInterrupt), the lock is given back first, so an exception out of a
// lock call always means "not locked". (A signal after the return is the program's, as after
// any call.) Returns whether the handler raised; its exception is then set.
template <class GiveBack>
bool interrupted_as_granted(GiveBack&& give_back) {
  if (PyErr_CheckSignals() == 0) return false;
  PyObject *type, *value, *traceback;
  PyErr_Fetch(&type, &value, &traceback);
  if (!give_back()) {
    // Not given back (its target died, say): the interrupt stays the error, with this as its
    // context.
    PyObject *failed_type, *failed, *failed_traceback;
    PyErr_Fetch(&failed_type, &failed, &failed_traceback);
    PyErr_NormalizeException(&failed_type, &failed, &failed_traceback);
    PyErr_NormalizeException(&type, &value, &traceback);
    if (failed != nullptr && value != nullptr) {
      if (failed_traceback != nullptr) PyException_SetTraceback(failed, failed_traceback);
      PyException_SetContext(value, failed);  // (steals failed)
    } else {
      Py_XDECREF(failed);
    }
    Py_XDECREF(failed_type);
    Py_XDECREF(failed_traceback);
  }
  PyErr_Restore(type, value, traceback);
  return true;
}

// RMA_CHECK's step of a granted lock (in the plain call's release of the GIL, before
// interrupted_as_granted looks for a signal that came meanwhile). If it fails (an Interrupted,
// as a Ctrl-C raises), the lock goes back, plainly, before the error leaves the lock call, so
// that an exception out of a lock call always means "not locked". The step's error stays the
// one raised.
template <class Step, class Release>
void checked_grant(CheckState* check, Step&& step, Release&& release) {
  if (check == nullptr) return;
  try {
    step(*check);
  } catch (...) {
    try {
      release();
    } catch (...) {  // (not given back: its target died, say; the step's error stays)
    }
    throw;
  }
}

PyObject* lock(WindowObject* self, PyObject** slot) {
  check_open(self, "lock");
  int rank = rank_of(self, slot[0], "lock", "rank", false);
  int type = lock_type_of(slot[1], "lock");
  long mode = mode_of(slot[2], "lock");
  check_locks(self, "lock");
  bool exclusive = type == rma::kLockExclusive;
  CheckState* check = state_of(self).check.get();
  released([&] {
    core_of(self).lock(rank, type, static_cast<int>(mode));
    checked_grant(
        check, [&](CheckState& state) { state.locked(rank, exclusive); }, [&] { core_of(self).unlock(rank); });
  });
  if (interrupted_as_granted([&] { return window_calls::unlock(self, rank); })) return nullptr;
  return new_epoch(reinterpret_cast<PyObject*>(self), EpochKind::Lock, rank);
}

PyObject* try_lock(WindowObject* self, PyObject** slot) {
  check_open(self, "lock");
  int rank = rank_of(self, slot[0], "lock", "rank", false);
  int type = lock_type_of(slot[1], "lock");
  check_locks(self, "lock");
  bool granted = false;
  released([&] { granted = core_of(self).try_lock(rank, type); });
  if (granted && interrupted_as_granted([&] { return window_calls::unlock(self, rank); })) return nullptr;
  return PyBool_FromLong(granted);
}

PyObject* unlock(WindowObject* self, PyObject** slot) {
  check_open(self, "unlock");
  int rank = rank_of(self, slot[0], "unlock", "rank", false);
  return window_calls::unlock(self, rank) ? none() : nullptr;
}

PyObject* lock_all(WindowObject* self, PyObject** slot) {
  check_open(self, "lock_all");
  long mode = mode_of(slot[0], "lock_all");
  check_locks(self, "lock_all");
  CheckState* check = state_of(self).check.get();
  released([&] {
    core_of(self).lock_all(static_cast<int>(mode));
    checked_grant(check, [](CheckState& state) { state.locked_all(); }, [&] { core_of(self).unlock_all(); });
  });
  if (interrupted_as_granted([&] { return window_calls::unlock_all(self); })) return nullptr;
  return new_epoch(reinterpret_cast<PyObject*>(self), EpochKind::LockAll, 0);
}

PyObject* unlock_all(WindowObject* self) { return window_calls::unlock_all(self) ? none() : nullptr; }

// RMA_CHECK: after a flush of targets (local: a flush_local, which orders nothing at them).
PyObject* checked_flush(WindowObject* self, std::span<const int> targets, bool local) {
  if (CheckState* check = state_of(self).check.get()) check->flushed(targets, local);
  return none();
}

PyObject* flush_rank(WindowObject* self, PyObject* value, const char* call, bool local) {
  check_open(self, call);
  int rank = rank_of(self, value, call, "rank", true);
  rma::Window& core = core_of(self);
  bool flushed = (rank != rma::kProcNull && !state_of(self).held.any(rank) && core.flush_direct(rank)) ||
                 synchronize(self, call, rank, [&] { core.flush(rank, call); });
  if (!flushed) return nullptr;
  if (rank == rma::kProcNull) return none();
  return checked_flush(self, std::span<const int>(&rank, 1), local);
}

PyObject* flush(WindowObject* self, PyObject** slot) { return flush_rank(self, slot[0], "flush", false); }
PyObject* flush_local(WindowObject* self, PyObject** slot) { return flush_rank(self, slot[0], "flush_local", true); }

PyObject* flush_every(WindowObject* self, const char* call, bool local) {
  if (!synchronize(self, call, kEveryTarget, [&] { core_of(self).flush_all(call); })) return nullptr;
  CheckState* check = state_of(self).check.get();
  return check != nullptr ? checked_flush(self, check->checker().everyone(), local) : none();
}

PyObject* flush_all(WindowObject* self) { return flush_every(self, "flush_all", false); }
PyObject* flush_local_all(WindowObject* self) { return flush_every(self, "flush_local_all", true); }

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

PyObject* sync(WindowObject* self) {
  check_open(self, "sync");
  core_of(self).sync();
  if (!checked_step(self, [](CheckState& check) { check.synced(); })) return nullptr;
  return none();
}

PyObject* free_window(WindowObject* self) {
  check_open(self, "free");
  released([&] { core_of(self).free(); });
  state_of(self).held.drop_all();
  state_of(self).attached.clear();
  return none();
}

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

PyObject* held_count(WindowObject* self) { return PyLong_FromSize_t(state_of(self).held.count()); }

#define RMA_METHOD(name, parameters, body, doc) {name, &method<parameters, body>, doc}
#define RMA_METHOD0(name, body, doc) {#name, &method0<k_##name, body>, doc}

const MethodSpec sync_methods[] = {
    RMA_METHOD("fence", kMode, fence, window_docs::fence),
    RMA_METHOD("post", kPost, post, window_docs::post),
    RMA_METHOD("start", kStart, start, window_docs::start),
    RMA_METHOD0(complete, complete, window_docs::complete),
    RMA_METHOD0(wait, wait, window_docs::wait),
    RMA_METHOD0(test, test, window_docs::test),
    RMA_METHOD("lock", kLock, lock, window_docs::lock),
    RMA_METHOD("unlock", kUnlock, unlock, window_docs::unlock),
    RMA_METHOD("lock_all", kLockAllMode, lock_all, window_docs::lock_all),
    RMA_METHOD0(unlock_all, unlock_all, window_docs::unlock_all),
    RMA_METHOD("flush", kFlush, flush, window_docs::flush),
    RMA_METHOD0(flush_all, flush_all, window_docs::flush_all),
    RMA_METHOD("flush_local", kFlushLocal, flush_local, window_docs::flush_local),
    RMA_METHOD0(flush_local_all, flush_local_all, window_docs::flush_local_all),
    RMA_METHOD0(sync, sync, window_docs::sync),
    RMA_METHOD0(free, free_window, window_docs::free),
    RMA_METHOD("wait_until", kWaitUntil, wait_until, window_docs::wait_until),
    RMA_METHOD("attach", kAttach, attach, window_docs::attach),
    RMA_METHOD("detach", kDetach, detach, window_docs::detach),
    RMA_METHOD(
        "_try_lock", kTryLock, try_lock,
        "_try_lock($self, /, rank, lock_type)\n--\n\nLock rank only if that can be done at once; say whether it was (rma.sync.Mutex)."),
    RMA_METHOD(
        "_check_start", kCheckStart, check_start,
        "_check_start($self, /, comm, world, name, board)\n--\n\nTurn RMA_CHECK on for this window; return its _core.WindowCheck."),
    RMA_METHOD0(_held_count, held_count,
                "_held_count($self, /)\n--\n\nReturn how many buffers the window keeps for calls not yet complete."),
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

namespace window_calls {

bool fence(WindowObject* self, long mode) {
  CheckState* check = state_of(self).check.get();
  if (check == nullptr) {
    return synchronize(self, "fence", kEveryTarget, [&] { core_of(self).fence(static_cast<int>(mode)); });
  }
  // RMA_CHECK's exchange of accesses passes the ranks: it is the fence's barrier.
  return synchronize(self, "fence", kEveryTarget,
                     [&] {
                       core_of(self).fence(static_cast<int>(mode), [check] { check->exchange_for_fence("win.fence"); });
                     }) &&
         checked_step(self, [](CheckState& check) {
           check.fenced_after_exchange();
           check.report();
         });
}

bool complete(WindowObject* self) {
  return checked_step(self,
                      [&](CheckState& check) {
                        check_open(self, "complete");  // (a freed window's checker has no board left)
                        check.completing(core_of(self));
                      }) &&
         synchronize(self, "complete", kEveryTarget, [&] { core_of(self).complete(); }) &&
         checked_step(self, [](CheckState& check) { check.completed(); });
}

bool wait(WindowObject* self) {
  return synchronize(self, "wait", rma::kProcNull, [&] { core_of(self).wait(); }) &&  // completes no call of ours
         checked_step(self, [](CheckState& check) { check.waited(); });
}

bool unlock(WindowObject* self, int rank) {
  CheckState* check = state_of(self).check.get();
  return synchronize(self, "unlock", rank,
                     [&] {
                       if (check != nullptr) check->unlocking(rank);  // (before: it sends what the unlock completes)
                       core_of(self).unlock(rank);
                     }) &&
         checked_step(self, [&](CheckState& check) { check.unlocked(std::span<const int>(&rank, 1)); });
}

bool unlock_all(WindowObject* self) {
  CheckState* check = state_of(self).check.get();
  return synchronize(self, "unlock_all", kEveryTarget,
                     [&] {
                       if (check != nullptr) check->unlocking_all();
                       core_of(self).unlock_all();
                     }) &&
         checked_step(self, [](CheckState& check) { check.unlocked(check.checker().everyone()); });
}

bool request_test(WindowObject* self, int rank, uint64_t serial, bool& done) {
  return guarded([&]() -> PyObject* {
           bool idle = false;
           released([&] { idle = core_of(self).target_idle(rank, "Request.test"); });
           if (idle) state_of(self).held.finish(rank);
           if (idle && state_of(self).check) state_of(self).check->request_completed(rank, serial);
           done = idle;
           return Py_None;
         }) != nullptr;
}

bool request_wait(WindowObject* self, int rank, uint64_t serial) {
  return guarded([&]() -> PyObject* {
           rma::Window& core = core_of(self);
           released([&] {
             if (!core.target_idle(rank, "Request.wait") && core.in_passive_epoch(rank))
               core.flush(rank, "Request.wait");
           });
           state_of(self).held.finish(rank);
           if (state_of(self).check) state_of(self).check->request_completed(rank, serial);
           return Py_None;
         }) != nullptr;
}

}  // namespace window_calls

namespace window_methods {
std::span<const MethodSpec> sync_call_methods() { return sync_methods; }
}  // namespace window_methods

void register_window_type(py::module_& m) {
  if (PyType_Ready(window_type()) < 0) throw py::error_already_set();
  Py_INCREF(window_type());
  for (const MethodSpec& spec : sync_methods) add_method(window_type(), spec);
  for (const MethodSpec& spec : data_call_methods()) add_method(window_type(), spec);
  m.attr("Window") = py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(window_type()));
  register_epoch_types(m);
}
