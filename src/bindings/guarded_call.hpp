// How a compiled method of rma._core (a window's, a communicator's) runs its body: C++
// exceptions become Python's, and blocking core calls run with the GIL released.
#pragma once

#include <Python.h>
#include <pybind11/pybind11.h>

#include <exception>

#include "python_errors.hpp"

namespace guarded_call {

// Runs body; a C++ exception becomes the Python exception of rma.errors (or TypeError,
// ValueError) and the method returns null.
template <class Body>
PyObject* guarded(Body&& body) {
  try {
    return body();
  } catch (pybind11::error_already_set& error) {
    error.restore();
  } catch (...) {
    std::exception_ptr failure = std::current_exception();
    if (!set_python_error(failure)) {
      try {
        std::rethrow_exception(failure);
      } catch (const std::exception& error) {
        PyErr_SetString(PyExc_RuntimeError, error.what());
      } catch (...) {
        PyErr_SetString(PyExc_RuntimeError, "rma: unknown error in the core");
      }
    }
  }
  return nullptr;
}

// Runs body with the GIL released (it may block); rethrows its exception with the GIL held.
template <class Body>
void released(Body&& body) {
  std::exception_ptr failure;
  Py_BEGIN_ALLOW_THREADS
  try {
    body();
  } catch (...) {
    failure = std::current_exception();
  }
  Py_END_ALLOW_THREADS
  if (failure) std::rethrow_exception(failure);
}

}  // namespace guarded_call
