// The pickling of rma.Comm's objects, from C++ (comm_object.cpp, message_request.cpp): the
// same calls as Python's pickle.dumps(obj, HIGHEST_PROTOCOL) and pickle.loads(data), looked
// up once. Each returns a new reference, or null with the Python error set.
#pragma once

#include <Python.h>

namespace pickled {

PyObject* dumps(PyObject* obj);
PyObject* loads(PyObject* data);
// Sets status.source and status.tag (an rma.Status) unless status is null or None; false
// with the Python error set if that fails.
bool fill_status(PyObject* status, int source, int tag);

}  // namespace pickled
