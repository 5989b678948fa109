// Arguments of the compiled methods, parsed once in C++ (window_*_calls.cpp, comm_object.cpp): the
// keyword/positional matching of a method, ints that must not be bools, and NumPy operands.
// Every function here throws on a bad argument: rma::ArgumentTypeError (TypeError),
// rma::UsageError (ValueError), or py::error_already_set for an error Python raised.
#pragma once

#include <Python.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "elements/reduce.hpp"
#include "parameters.hpp"

namespace arguments {

namespace py = pybind11;

using Parameter = parameters::Parameter;
using Parameters = parameters::Parameters;

// Fills slots[i] (borrowed, null when absent) from a vectorcall's arguments, as Python would,
// with Python's own errors (TypeError: missing, unexpected or doubled arguments).
void match(const Parameters& parameters, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames, PyObject** slots);

// An int argument (int, or anything with __index__ such as NumPy integers; not a bool, and
// not an rma.Op, Mode or LockType): its value. what: "target_disp", for the message
// "rma: win.put: target_disp must be an integer" (owner "win").
int64_t integer(PyObject* value, const char* call, const char* what, const char* owner = "win");

// A NumPy array (or something made into one) that a call reads from or writes into.
struct Operand {
  py::object array;  // the array the core uses: C-contiguous (a copy or stand-in if needed)
  char* data = nullptr;
  rma::ElementType type = rma::ElementType::Bytes;
  uint64_t itemsize = 1;
  uint64_t elements = 0;
  uint64_t bytes = 0;
  PyObject* dtype = nullptr;
};

// What a target rank's window takes.
struct TargetLayout {
  py::object dtype;  // its dtype (the canonical object for the element types)
  rma::ElementType type;
  uint64_t itemsize;
  uint64_t unit;  // bytes per displacement
  bool raw;       // a uint8 window: calls by displacement bring any plain dtype
};

// Whether value is a NumPy array.
bool is_array(PyObject* value);
// dtype refused by every window: one that holds Python objects (pointers) or has no size.
void check_plain(PyObject* dtype, const char* call, const char* role);
// array as an operand of a call to `target`, which must be of `expected` dtype unless
// raw_ok (a raw window addressed by displacement). C-contiguous arrays are used in place,
// others copied (origins) or given a contiguous stand-in (results, copied back later).
Operand from_array(PyObject* array, const TargetLayout& target, PyObject* expected, bool raw_ok, bool writable,
                   const char* call, const char* role);
// A Python number (int, float, complex, bool) as one element of `type`, when the element takes
// a number of its kind (elements/number_kinds.hpp: bool only into bool, ints into integers,
// floats or complex, floats into floats or complex, complex into complex); ValueError if it
// does not fit. False (nothing set) if value is no Python number or type is raw bytes;
// TypeError if it is the wrong kind.
bool scalar(PyObject* value, rma::ElementType type, std::array<std::byte, 16>& out, const char* call);

}  // namespace arguments
