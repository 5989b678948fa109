// The compiled communicator type, rma._core.Comm (comm_object.cpp): the base of rma.Comm
// whose methods are the calls made in loops. Its methods live in comm_object.cpp (messages)
// comm_array_calls.cpp (reductions of arrays) and comm_raw_calls.cpp (raw bytes, probes).
#pragma once

#include <Python.h>

#include <memory>
#include <span>

#include "method_object.hpp"
#include "runtime/communicator.hpp"

struct CommObject {
  PyObject_HEAD
  std::shared_ptr<rma::Communicator>* core;
};

inline rma::Communicator& comm_core_of(PyObject* self) { return **reinterpret_cast<CommObject*>(self)->core; }

// A rank or tag argument of comm.<call>, its parameter called `name`: an int (not a bool, nor an
// rma.Op or LockType) >= 0, or also kAnySource/kAnyTag where `wildcard`, and PROC_NULL where
// `proc_null`. TypeError or ValueError with rma.Comm's messages.
int comm_number(PyObject* value, const char* call, const char* name, bool wildcard, bool proc_null);

// The methods of comm_array_calls.cpp, for rma._core.Comm's dictionary.
std::span<const MethodSpec> comm_array_methods();
// The methods of comm_raw_calls.cpp (raw bytes, synchronous sends, probes).
std::span<const MethodSpec> comm_raw_methods();
