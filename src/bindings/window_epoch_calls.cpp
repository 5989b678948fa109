// The epoch calls of rma._core.Window: fence, post/start/complete/wait/test, lock/unlock,
// lock_all/unlock_all, the flushes and sync (with their RMA_CHECK steps, and the care that an
// exception out of a lock call means "not locked"), and the closing calls that the epoch and
// request objects make (window_calls, epoch_object.cpp). Each runs the core's call with the GIL
// released, then finishes the buffers of the calls it completed.
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "constants.hpp"
#include "window_docs.hpp"
#include "window_methods.hpp"

namespace py = pybind11;

using namespace window_methods;
using rma::check::CallSteps;

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

constexpr arguments::Parameter kModeFlags{"mode", "0"}, kRank{"rank"}, kGroup{"group"};
constexpr Parameters kFence{"fence", {kModeFlags}, 1};
constexpr Parameters kLockAll{"lock_all", {kModeFlags}, 1};
constexpr Parameters kPost{"post", {kGroup, kModeFlags}, 2};
constexpr Parameters kStart{"start", {kGroup, kModeFlags}, 2};
constexpr Parameters kLock{"lock", {kRank, {"lock_type", "rma.LockType.EXCLUSIVE"}, kModeFlags}, 3};
constexpr Parameters kTryLock{"_try_lock", {kRank, {"lock_type"}}, 2};
constexpr Parameters kLockAtOnce{"_lock_at_once", {kRank, {"lock_type", "rma.LockType.EXCLUSIVE"}}, 2};
constexpr Parameters kUnlock{"unlock", {kRank}, 1};
constexpr Parameters kFlush{"flush", {kRank}, 1};
constexpr Parameters kFlushLocal{"flush_local", {kRank}, 1};
#define RMA_NO_PARAMETERS(name) constexpr Parameters k_##name{#name, {}, 0};
RMA_NO_PARAMETERS(complete)
RMA_NO_PARAMETERS(wait)
RMA_NO_PARAMETERS(test)
RMA_NO_PARAMETERS(unlock_all)
RMA_NO_PARAMETERS(flush_all)
RMA_NO_PARAMETERS(flush_local_all)
RMA_NO_PARAMETERS(sync)
#undef RMA_NO_PARAMETERS

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
           step(check->steps());
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
  if (CheckState* check = state_of(self).check.get(); check != nullptr && kind == EpochKind::Post)
    check->steps().posting();
  released([&] { (core_of(self).*open)(group, static_cast<int>(mode)); });
  if (CheckState* check = state_of(self).check.get()) {
    if (kind == EpochKind::Post) {
      check->steps().posted();
    } else {
      check->steps().started(group);
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
  if (done && !checked_step(self, [](CallSteps& check) { check.waited(); })) return nullptr;
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
    step(check->steps());
  } catch (...) {
    try {
      release();
    } catch (...) {  // (not given back: its target died, say; the step's error stays)
    }
    throw;
  }
}

// win.lock, or win._lock_at_once (at_once: the lock is held when it returns, even on a rank
// of another host, whose lock otherwise rides the epoch's first call: rma.sync.Mutex).
PyObject* lock_with(WindowObject* self, PyObject** slot, bool at_once) {
  check_open(self, "lock");
  int rank = rank_of(self, slot[0], "lock", "rank", false);
  TracedCall::note(core_of(self).job_rank(rank), 0);
  int type = lock_type_of(slot[1], "lock");
  long mode = at_once ? 0 : mode_of(slot[2], "lock");
  check_locks(self, "lock");
  bool exclusive = type == rma::kLockExclusive;
  CheckState* check = state_of(self).check.get();
  released([&] {
    // RMA_CHECK's step reads the clock the last holder left: the lock must be held by then.
    core_of(self).lock(rank, type, static_cast<int>(mode), at_once || check != nullptr);
    checked_grant(check, [&](CallSteps& state) { state.locked(rank, exclusive); }, [&] { core_of(self).unlock(rank); });
  });
  if (interrupted_as_granted([&] { return window_calls::unlock(self, rank); })) return nullptr;
  return new_epoch(reinterpret_cast<PyObject*>(self), EpochKind::Lock, rank);
}

PyObject* lock(WindowObject* self, PyObject** slot) { return lock_with(self, slot, false); }
PyObject* lock_at_once(WindowObject* self, PyObject** slot) { return lock_with(self, slot, true); }

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
  TracedCall::note(core_of(self).job_rank(rank), 0);
  return window_calls::unlock(self, rank) ? none() : nullptr;
}

PyObject* lock_all(WindowObject* self, PyObject** slot) {
  check_open(self, "lock_all");
  long mode = mode_of(slot[0], "lock_all");
  check_locks(self, "lock_all");
  CheckState* check = state_of(self).check.get();
  released([&] {
    core_of(self).lock_all(static_cast<int>(mode), check != nullptr);  // (as lock's step needs)
    checked_grant(check, [](CallSteps& state) { state.locked_all(); }, [&] { core_of(self).unlock_all(); });
  });
  if (interrupted_as_granted([&] { return window_calls::unlock_all(self); })) return nullptr;
  return new_epoch(reinterpret_cast<PyObject*>(self), EpochKind::LockAll, 0);
}

PyObject* unlock_all(WindowObject* self) { return window_calls::unlock_all(self) ? none() : nullptr; }

// RMA_CHECK: after a flush of targets (local: a flush_local, which orders nothing at them).
PyObject* checked_flush(WindowObject* self, std::span<const int> targets, bool local) {
  if (CheckState* check = state_of(self).check.get()) check->steps().flushed(targets, local);
  return none();
}

PyObject* flush_rank(WindowObject* self, PyObject* value, const char* call, bool local) {
  check_open(self, call);
  int rank = rank_of(self, value, call, "rank", true);
  rma::Window& core = core_of(self);
  TracedCall::note(core.job_rank(rank), 0);
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

PyObject* sync(WindowObject* self) {
  check_open(self, "sync");
  core_of(self).sync();
  if (!checked_step(self, [](CallSteps& check) { check.synced(); })) return nullptr;
  return none();
}

#define RMA_METHOD(parameters, body, doc) {parameters, &method<parameters, body>, doc}
#define RMA_METHOD0(name, body, doc) {k_##name, &method0<k_##name, body>, doc}

const MethodSpec epoch_methods[] = {
    RMA_METHOD(kFence, fence, window_docs::fence),
    RMA_METHOD(kPost, post, window_docs::post),
    RMA_METHOD(kStart, start, window_docs::start),
    RMA_METHOD0(complete, complete, window_docs::complete),
    RMA_METHOD0(wait, wait, window_docs::wait),
    RMA_METHOD0(test, test, window_docs::test),
    RMA_METHOD(kLock, lock, window_docs::lock),
    RMA_METHOD(kUnlock, unlock, window_docs::unlock),
    RMA_METHOD(kLockAll, lock_all, window_docs::lock_all),
    RMA_METHOD0(unlock_all, unlock_all, window_docs::unlock_all),
    RMA_METHOD(kFlush, flush, window_docs::flush),
    RMA_METHOD0(flush_all, flush_all, window_docs::flush_all),
    RMA_METHOD(kFlushLocal, flush_local, window_docs::flush_local),
    RMA_METHOD0(flush_local_all, flush_local_all, window_docs::flush_local_all),
    RMA_METHOD0(sync, sync, window_docs::sync),
    RMA_METHOD(kTryLock, try_lock, "Lock rank only if that can be done at once; say whether it was (rma.sync.Mutex)."),
    RMA_METHOD(kLockAtOnce, lock_at_once,
               "Lock rank and return once the lock is held, even on another host (rma.sync.Mutex)."),
};

#undef RMA_METHOD
#undef RMA_METHOD0

}  // namespace

namespace window_calls {

bool fence(WindowObject* self, long mode) {
  CheckState* check = state_of(self).check.get();
  if (check == nullptr) {
    return synchronize(self, "fence", kEveryTarget, [&] { core_of(self).fence(static_cast<int>(mode)); });
  }
  // RMA_CHECK's exchange of accesses passes the ranks: it is the fence's barrier.
  return synchronize(
             self, "fence", kEveryTarget,
             [&] { core_of(self).fence(static_cast<int>(mode), [check] { check->steps().exchange("win.fence"); }); }) &&
         checked_step(self, [](CallSteps& check) { check.fenced(); });
}

bool complete(WindowObject* self) {
  return checked_step(self,
                      [&](CallSteps& check) {
                        check_open(self, "complete");  // (a freed window's checker has no board left)
                        check.completing(core_of(self));
                      }) &&
         synchronize(self, "complete", kEveryTarget, [&] { core_of(self).complete(); }) &&
         checked_step(self, [](CallSteps& check) { check.completed(); });
}

bool wait(WindowObject* self) {
  return synchronize(self, "wait", rma::kProcNull, [&] { core_of(self).wait(); }) &&  // completes no call of ours
         checked_step(self, [](CallSteps& check) { check.waited(); });
}

bool unlock(WindowObject* self, int rank) {
  CheckState* check = state_of(self).check.get();
  return synchronize(self, "unlock", rank,
                     [&] {
                       if (check != nullptr)
                         check->steps().unlocking(rank);  // (before: it sends what the unlock completes)
                       core_of(self).unlock(rank);
                     }) &&
         checked_step(self, [&](CallSteps& check) { check.unlocked(std::span<const int>(&rank, 1)); });
}

bool unlock_all(WindowObject* self) {
  CheckState* check = state_of(self).check.get();
  return synchronize(self, "unlock_all", kEveryTarget,
                     [&] {
                       if (check != nullptr) check->steps().unlocking_all();
                       core_of(self).unlock_all();
                     }) &&
         checked_step(self, [](CallSteps& check) { check.unlocked(check.checker().everyone()); });
}

bool request_test(WindowObject* self, int rank, uint64_t serial, bool& done) {
  return guarded([&]() -> PyObject* {
           bool idle = false;
           released([&] { idle = core_of(self).target_idle(rank, "Request.test"); });
           if (idle) state_of(self).held.finish(rank);
           if (idle && state_of(self).check) state_of(self).check->steps().request_completed(rank, serial);
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
           if (state_of(self).check) state_of(self).check->steps().request_completed(rank, serial);
           return Py_None;
         }) != nullptr;
}

}  // namespace window_calls

namespace window_methods {
std::span<const MethodSpec> epoch_call_methods() { return epoch_methods; }
}  // namespace window_methods
