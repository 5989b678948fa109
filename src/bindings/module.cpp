// rma._core: the table of contents of the bindings. Each register_* file binds one concept;
// binding code converts types, releases the GIL around blocking calls and keeps Python buffers
// alive. Logic lives in src/core.
#include <pybind11/pybind11.h>

namespace py = pybind11;

void register_errors(py::module_& m);
void register_constants(py::module_& m);
void register_runtime(py::module_& m);
void register_communicator(py::module_& m);
void register_comm_type(py::module_& m);
void register_window(py::module_& m);
void register_window_type(py::module_& m);
void register_facade_window(py::module_& m);
void register_check(py::module_& m);
void register_trace(py::module_& m);

PYBIND11_MODULE(_core, m) {
  m.doc() = "Private extension of rma: the C++ core. Use the public API of the rma package.";
  register_errors(m);
  register_constants(m);
  register_runtime(m);
  register_communicator(m);
  register_comm_type(m);
  register_window(m);
  register_window_type(m);
  register_facade_window(m);
  register_check(m);
  register_trace(m);
}
