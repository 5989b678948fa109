// The pickling of rma.Comm's objects, from C++ (comm_object.cpp, message_request.cpp): the
// same calls as Python's pickle.dumps(obj, HIGHEST_PROTOCOL) and pickle.loads(data), looked
// up once. dumps and loads return a new reference, or null with the Python error set.
#pragma once

#include <Python.h>

namespace pickled {

PyObject* dumps(PyObject* obj);
PyObject* loads(PyObject* data);
// Sets status.source and status.tag (an rma.Status) unless status is null or None; throws
// pybind11::error_already_set if that fails.
void fill_status(PyObject* status, int source, int tag);

}  // namespace pickled
