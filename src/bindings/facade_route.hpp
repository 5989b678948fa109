// Where a compiled call of the mpi4py facade's MPI.Win (facade_window.cpp) goes: to the
// window underneath, whatever its kind.
//
// The window underneath is an rma.Window, or what the job's settings compose onto it
// (python/rma/_window_kinds.py): RMA_CHECK's checked window, RMA_MODEL=separate's, both. A kind
// overrides some of rma._core.Window's calls in Python (the separate model's fences and locks
// make its two copies meet). So each window gets a route when the MPI.Win takes it: for each
// call, whether its class resolves the call's name to rma._core.Window's own method. The
// compiled call then enters that method directly (no Python frame, as for a plain window), or
// calls the class's own by name with the same arguments. Either way the facade's argument
// handling runs, so it is the same code whatever the settings. A stand-in that is not an
// rma._core.Window (a freed window's) is not served: the Python path names the error.
#pragma once

#include <Python.h>

#include <array>
#include <cstdint>
#include <cstring>

#include "method_object.hpp"

namespace facade_route {

// The calls of rma._core.Window that the facade's compiled calls make: each call's enumerator
// and the name of its method, in one list (the enumeration and the names are made from it).
// clang-format off
#define RMA_FACADE_CALLS(CALL) \
  CALL(kPut, "put") \
  CALL(kGet, "get") \
  CALL(kAccumulate, "accumulate") \
  CALL(kGetAccumulate, "get_accumulate") \
  CALL(kFetchAndOp, "fetch_and_op") \
  CALL(kCompareAndSwap, "compare_and_swap") \
  CALL(kLock, "lock") \
  CALL(kFence, "fence") \
  CALL(kComplete, "complete") \
  CALL(kWait, "wait") \
  CALL(kTest, "test") \
  CALL(kUnlock, "unlock") \
  CALL(kLockAll, "lock_all") \
  CALL(kUnlockAll, "unlock_all") \
  CALL(kFlush, "flush") \
  CALL(kFlushAll, "flush_all") \
  CALL(kFlushLocal, "flush_local") \
  CALL(kFlushLocalAll, "flush_local_all") \
  CALL(kSync, "sync")

enum Call : uint8_t {
#define RMA_FACADE_CALL_ENUMERATOR(enumerator, name) enumerator,
  RMA_FACADE_CALLS(RMA_FACADE_CALL_ENUMERATOR)
#undef RMA_FACADE_CALL_ENUMERATOR
  kCalls  // their number
};
// clang-format on

struct Route {
  bool served = false;      // the window is an rma._core.Window
  uint32_t overridden = 0;  // bit 1 << call: its class has a method of its own for the call
};

// rma._core.Window's own method of each call, and the call's name.
struct Own {
  MethodFunction function;
  PyObject* name;  // interned
};
extern std::array<Own, kCalls> own;

// Reads rma._core.Window's methods (`window_type`: its type, already made); at import. Throws
// if one of the calls is missing.
void start(PyObject* window_type);

// The route of `window` (false, with a Python error set, if looking at its class failed).
bool route_of(PyObject* window, Route& route);

// Runs `call` on a served window with the facade's arguments for it (at most 6).
inline PyObject* run(PyObject* window, const Route& route, Call call, PyObject* const* args, Py_ssize_t nargs) {
  if ((route.overridden & (1u << call)) == 0) return own[call].function(window, args, nargs, nullptr);
  std::array<PyObject*, 7> with_window;
  with_window[0] = window;
  std::memcpy(with_window.data() + 1, args, nargs * sizeof(PyObject*));
  return PyObject_VectorcallMethod(own[call].name, with_window.data(), nargs + 1, nullptr);
}

// The Python method of `self` (an MPI.Win) that takes every form of a call: `general` is its
// name (`_Put` for Put), given the call's own arguments.
PyObject* general(PyObject* self, const char* general, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames);

}  // namespace facade_route
