// The constants of the API, made from the core's own tables so that Python restates none of
// them: rma.Op (elements/reduce.hpp), rma.Mode and rma.LockType (window/window.hpp),
// PROC_NULL, ELEMENT_DTYPES (the NumPy dtype of each element type, in the core's order) and
// ACCEPTED_NUMBER_KINDS (elements/number_kinds.hpp).
// The enum classes are Python's enum.Enum / enum.Flag, made here with the core's values.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <array>
#include <string>

#include "constants.hpp"
#include "elements/number_kinds.hpp"
#include "window/lock_queue.hpp"
#include "window/window.hpp"

namespace py = pybind11;

namespace {

// The members, by value, for identity checks on the hot path (kept for the process's life).
std::array<PyObject*, rma::kReduceOpNames.size()> op_members{};
std::array<PyObject*, 3> lock_members{};  // by lock type (1 exclusive, 2 shared)
std::array<PyObject*, rma::kElementTypeNames.size()> element_dtypes{};
PyObject* mode_class = nullptr;
PyObject* value_name = nullptr;  // "_value_": an enum member's value

struct Flag {
  const char* name;
  int value;
};
constexpr Flag kModeFlags[] = {
    {"NOCHECK", rma::kModeNoCheck},     {"NOSTORE", rma::kModeNoStore},     {"NOPUT", rma::kModeNoPut},
    {"NOPRECEDE", rma::kModeNoPrecede}, {"NOSUCCEED", rma::kModeNoSucceed},
};

// The NumPy kinds (dtype.kind) of the arrays that hold numbers of each kind, in the order of
// rma::NumberKind.
constexpr const char* kNumpyKinds[] = {"b", "iu", "f", "c"};

// The number-kind rule (elements/number_kinds.hpp) in NumPy's terms, for rma.Window._origin_of:
// for the kind of each window dtype that holds numbers, the kinds of the arrays whose values it
// takes: {"b": "b", "i": "iu", "u": "iu", "f": "iuf", "c": "iufc"}.
py::dict accepted_number_kinds() {
  py::dict accepted;
  for (rma::NumberKind element : rma::kNumberKinds) {
    std::string taken;
    for (rma::NumberKind value : rma::kNumberKinds) {
      if (rma::takes(element, value)) taken += kNumpyKinds[static_cast<size_t>(value)];
    }
    for (const char* kind = kNumpyKinds[static_cast<size_t>(element)]; *kind != '\0'; ++kind) {
      accepted[py::str(std::string(1, *kind))] = taken;
    }
  }
  return accepted;
}

py::object make_enum(const char* base, const char* name, const py::list& members, const char* doc) {
  py::object made = py::module_::import("enum").attr(base)(name, members, py::arg("module") = "rma");
  made.attr("__doc__") = doc;
  return made;
}

}  // namespace

namespace constants {

bool op_of(PyObject* value, rma::ReduceOp& op) {
  for (size_t i = 0; i < op_members.size(); ++i) {
    if (op_members[i] == value) {
      op = static_cast<rma::ReduceOp>(i);
      return true;
    }
  }
  return false;
}

bool lock_type_of(PyObject* value, int& type) {
  for (int candidate : {rma::kLockExclusive, rma::kLockShared}) {
    if (lock_members[candidate] == value) {
      type = candidate;
      return true;
    }
  }
  return false;
}

bool mode_of(PyObject* value, long& flags) {
  PyObject* number = nullptr;
  if (PyLong_Check(value) && !PyBool_Check(value)) {
    number = Py_NewRef(value);
  } else if (Py_TYPE(value) == reinterpret_cast<PyTypeObject*>(mode_class)) {
    number = PyObject_GetAttr(value, value_name);
  }
  if (number == nullptr) {
    PyErr_Clear();
    return false;
  }
  int overflow = 0;
  flags = PyLong_AsLongAndOverflow(number, &overflow);
  Py_DECREF(number);
  if (flags == -1 && PyErr_Occurred()) PyErr_Clear();
  if (overflow != 0) flags = -1;  // a combination of no flags: the core says so
  return true;
}

rma::ElementType element_type_of(PyObject* dtype) {
  for (size_t i = 0; i < element_dtypes.size(); ++i) {
    if (element_dtypes[i] == dtype) return static_cast<rma::ElementType>(i);
  }
  // An equal dtype that is another object (one made by hand, or unpickled).
  for (size_t i = 0; i < element_dtypes.size(); ++i) {
    if (py::detail::npy_api::get().PyArray_EquivTypes_(element_dtypes[i], dtype)) {
      return static_cast<rma::ElementType>(i);
    }
  }
  return rma::ElementType::Bytes;
}

}  // namespace constants

void register_constants(py::module_& m) {
  value_name = PyUnicode_InternFromString("_value_");

  py::list ops;
  for (size_t i = 0; i < rma::kReduceOpNames.size(); ++i) ops.append(py::make_tuple(rma::kReduceOpNames[i], i));
  py::object op =
      make_enum("Enum", "Op", ops, "The operations of accumulate, get_accumulate and fetch_and_op (MPI_SUM...).");
  for (size_t i = 0; i < rma::kReduceOpNames.size(); ++i) {
    op_members[i] = py::object(op.attr(rma::kReduceOpNames[i])).release().ptr();
  }
  m.attr("Op") = op;

  py::list modes;
  for (const Flag& flag : kModeFlags) modes.append(py::make_tuple(flag.name, flag.value));
  py::object mode = make_enum("Flag", "Mode", modes,
                              "Assertions for fence, post, start and lock (MPI_MODE_*); combine them with ``|``.");
  mode_class = mode.inc_ref().ptr();
  m.attr("Mode") = mode;

  py::list locks;
  locks.append(py::make_tuple("EXCLUSIVE", static_cast<int>(rma::kLockExclusive)));
  locks.append(py::make_tuple("SHARED", static_cast<int>(rma::kLockShared)));
  py::object lock_type =
      make_enum("Enum", "LockType", locks, "The kinds of lock of win.lock: rma.LOCK_EXCLUSIVE and rma.LOCK_SHARED.");
  lock_members[rma::kLockExclusive] = py::object(lock_type.attr("EXCLUSIVE")).release().ptr();
  lock_members[rma::kLockShared] = py::object(lock_type.attr("SHARED")).release().ptr();
  m.attr("LockType") = lock_type;

  m.attr("PROC_NULL") = rma::kProcNull;

  py::object dtype = py::module_::import("numpy").attr("dtype");
  py::list dtypes;
  for (size_t i = 0; i < rma::kElementTypeNames.size(); ++i) {
    py::object made = dtype(rma::kElementTypeNames[i]);
    element_dtypes[i] = made.inc_ref().ptr();
    dtypes.append(made);
  }
  // The dtypes every window call takes for accumulates; any other fixed-size plain dtype is
  // moved as raw bytes (put and get).
  m.attr("ELEMENT_DTYPES") = py::tuple(dtypes);
  m.attr("ACCEPTED_NUMBER_KINDS") = accepted_number_kinds();
}
