// The core's exceptions as Python exceptions of rma.errors (register_errors.cpp), for binding
// code that calls the core outside pybind11's dispatcher (the compiled window type, window_methods.hpp).
#pragma once

#include <exception>

// Sets the Python error for the core's exception (the GIL held); false if it is not one.
bool set_python_error(std::exception_ptr pointer);
