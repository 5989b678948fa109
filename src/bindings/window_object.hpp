// The compiled window type, rma._core.Window (window_object.cpp): the one entrance of every
// window call from Python. rma.Window (python/rma/window.py) subclasses it for what needs
// NumPy (creation, win.local, target= regions, origin conversion) and the properties.
#pragma once

#include <Python.h>
#include <pybind11/pybind11.h>

#include <map>
#include <memory>
#include <vector>

#include "arguments.hpp"
#include "check_state.hpp"
#include "keep_alive.hpp"
#include "window/window.hpp"

// What the type holds beyond the Python object header (made in tp_new, gone in tp_dealloc).
struct WindowState {
  std::shared_ptr<rma::Window> core;
  std::vector<arguments::TargetLayout> targets;  // by rank
  pybind11::object memory_owner;                 // keeps this rank's window memory alive
  KeepAlive held;
  std::map<uintptr_t, pybind11::object> attached;  // a dynamic window's memory, by address
  bool no_locks;
  bool dynamic;
  std::shared_ptr<CheckState> check = nullptr;  // under RMA_CHECK (rma.check.window.CheckedWindow)
};

struct WindowObject {
  PyObject_HEAD
  WindowState* state;
};

// The closing calls of the epoch objects (epoch_object.cpp): the methods' own bodies
// (window_epoch_calls.cpp). Each returns false with a Python error set.
namespace window_calls {
bool fence(WindowObject* self, long mode);
bool complete(WindowObject* self);
bool wait(WindowObject* self);
bool unlock(WindowObject* self, int rank);
bool unlock_all(WindowObject* self);
// A request's completion: true once every call to rank has completed (finishing its buffers).
// serial: the call's RMA_CHECK serial (0 when not checked), whose watches it completes.
bool request_test(WindowObject* self, int rank, uint64_t serial, bool& done);
bool request_wait(WindowObject* self, int rank, uint64_t serial);
}  // namespace window_calls

// Epoch kinds of the context managers the opening calls return.
enum class EpochKind { Fence, Post, Start, Lock, LockAll };
PyObject* new_epoch(PyObject* window, EpochKind kind, int rank);
PyObject* new_request(PyObject* window, int rank, PyObject* result, uint64_t serial);
void register_epoch_types(pybind11::module_& m);
