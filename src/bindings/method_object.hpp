// The methods of rma._core.Window and rma._core.Comm as descriptors of their own type
// (method_object.cpp): they are called like built-in methods (no bound-method object on
// `win.put(...)`, thanks to Py_TPFLAGS_METHOD_DESCRIPTOR), and, unlike built-in methods, they
// have a __signature__ whose defaults may be rma.SUM or rma.LOCK_EXCLUSIVE (inspect.signature,
// IPython's `win.put?`), made from the parameter table that also matches their arguments
// (parameters.hpp), which they show as `_parameters`.
#pragma once

#include <Python.h>

#include "parameters.hpp"

// The function of a method: self, then the call's other arguments (vectorcall convention).
using MethodFunction = PyObject* (*)(PyObject * self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames);

struct MethodSpec {
  // Its name and signature (parameters.hpp); the same table matches the method's arguments.
  const parameters::Parameters& parameters;
  MethodFunction function;
  const char* doc;  // "One imperative line.\n\nMore."
};

// Puts the method `spec` in `type`'s dictionary (after PyType_Ready). Throws on failure.
void add_method(PyTypeObject* type, const MethodSpec& spec);

// The static type object of one of rma._core's compiled types (before PyType_Ready): its
// instances hold `size` bytes, are made by `make` (null: not from Python) and freed by `free`;
// `extra_flags`: Py_TPFLAGS_BASETYPE for a type that rma's Python subclasses.
inline PyTypeObject compiled_type(const char* name, const char* doc, Py_ssize_t size, unsigned long extra_flags,
                                  newfunc make, destructor free) {
  PyTypeObject t{PyVarObject_HEAD_INIT(nullptr, 0)};
  t.tp_name = name;
  t.tp_doc = doc;
  t.tp_basicsize = size;
  t.tp_flags = Py_TPFLAGS_DEFAULT | extra_flags;
  t.tp_new = make;
  t.tp_dealloc = free;
  return t;
}
