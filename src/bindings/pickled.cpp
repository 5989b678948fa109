#include "pickled.hpp"

#include <pybind11/pybind11.h>

namespace py = pybind11;

namespace pickled {

namespace {
struct Names {
  PyObject* dumps;
  PyObject* loads;
  PyObject* protocol;
  PyObject* source;
  PyObject* tag;
};

// Kept for the life of the process (the module's functions never change).
const Names& names() {
  static const Names made = [] {
    py::module_ module = py::module_::import("pickle");
    auto kept = [&](const char* name) { return py::object(module.attr(name)).release().ptr(); };
    return Names{kept("dumps"), kept("loads"), kept("HIGHEST_PROTOCOL"), PyUnicode_InternFromString("source"),
                 PyUnicode_InternFromString("tag")};
  }();
  return made;
}
}  // namespace

PyObject* dumps(PyObject* obj) {
  PyObject* args[] = {obj, names().protocol};
  return PyObject_Vectorcall(names().dumps, args, 2, nullptr);
}

PyObject* loads(PyObject* data) {
  // An empty message is None, as mpi4py reads one (a buffer send of no bytes, received as an object).
  if (PyBytes_Check(data) && PyBytes_GET_SIZE(data) == 0) Py_RETURN_NONE;
  return PyObject_CallOneArg(names().loads, data);
}

void fill_status(PyObject* status, int source, int tag) {
  if (status == nullptr || status == Py_None) return;
  py::object source_value = py::reinterpret_steal<py::object>(PyLong_FromLong(source));
  py::object tag_value = py::reinterpret_steal<py::object>(PyLong_FromLong(tag));
  if (!source_value || !tag_value || PyObject_SetAttr(status, names().source, source_value.ptr()) < 0 ||
      PyObject_SetAttr(status, names().tag, tag_value.ptr()) < 0) {
    throw py::error_already_set();
  }
}

}  // namespace pickled
