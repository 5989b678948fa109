// Maps the core's exceptions, once, onto the classes of rma.errors.
#include <pybind11/pybind11.h>

#include "base/errors.hpp"
#include "base/trace.hpp"
#include "fabric/check.hpp"
#include "python_errors.hpp"

namespace py = pybind11;

namespace {
void raise(const char* name, const char* message) {
  rma::trace::error(name, message);  // (marked in the trace, RMA_TRACE)
  // rma.errors is pure Python, so the exception classes exist once, importable without _core.
  py::object cls = py::module_::import("rma.errors").attr(name);
  PyErr_SetString(cls.ptr(), message);
}

void raise_builtin(PyObject* cls, const char* name, const char* message) {
  rma::trace::error(name, message);
  PyErr_SetString(cls, message);
}
}  // namespace

bool set_python_error(std::exception_ptr pointer) {
  try {
    if (pointer) std::rethrow_exception(pointer);
  } catch (const rma::fabric::FabricError& e) {
    raise("FabricError", e.what());
  } catch (const rma::PeerError& e) {
    raise("PeerError", e.what());
  } catch (const rma::Interrupted& e) {
    // Let Python's own SIGINT handler decide (KeyboardInterrupt, usually); if it raises
    // nothing, report the interruption as an RMAError.
    if (PyErr_CheckSignals() == 0) raise("RMAError", e.what());
  } catch (const rma::EpochError& e) {
    raise("EpochError", e.what());
  } catch (const rma::RangeError& e) {
    raise("TargetRangeError", e.what());
  } catch (const rma::TimeoutError& e) {
    raise("RMATimeoutError", e.what());
  } catch (const rma::OutOfMemoryError& e) {
    raise("OutOfMemoryError", e.what());
  } catch (const rma::RmaError& e) {
    raise("RMAError", e.what());
  } catch (const rma::UsageError& e) {
    raise_builtin(PyExc_ValueError, "ValueError", e.what());
  } catch (const rma::ArgumentTypeError& e) {
    raise_builtin(PyExc_TypeError, "TypeError", e.what());
  } catch (...) {
    return false;
  }
  return true;
}

void register_errors(py::module_& m) {
  py::register_exception_translator([](std::exception_ptr pointer) {
    if (!set_python_error(pointer)) std::rethrow_exception(pointer);  // the next translator's
  });
  (void)m;
}
