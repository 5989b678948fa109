#include "arguments.hpp"

#include <complex>
#include <cstring>
#include <limits>
#include <optional>

#include "base/errors.hpp"
#include "constants.hpp"
#include "elements/number_kinds.hpp"

namespace arguments {

namespace {

std::string type_name(PyObject* value) { return Py_TYPE(value)->tp_name; }

[[noreturn]] void type_error(const std::string& text) { throw rma::ArgumentTypeError(text); }

bool is_enum_constant(PyObject* value) {
  rma::ReduceOp op;
  int lock;
  long flags;
  return constants::op_of(value, op) || constants::lock_type_of(value, lock) ||
         (!PyLong_Check(value) && constants::mode_of(value, flags));
}

}  // namespace

void match(const Parameters& p, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames, PyObject** slots) {
  for (int i = 0; i < p.count; ++i) slots[i] = nullptr;
  if (nargs > p.positional) {
    PyErr_Format(PyExc_TypeError, "%s.%s() takes at most %d positional argument%s (%zd given)", p.owner, p.method,
                 p.positional, p.positional == 1 ? "" : "s", nargs);
    throw py::error_already_set();
  }
  for (Py_ssize_t i = 0; i < nargs; ++i) slots[i] = args[i];
  Py_ssize_t keywords = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  for (Py_ssize_t k = 0; k < keywords; ++k) {
    PyObject* name = PyTuple_GET_ITEM(kwnames, k);
    int slot = -1;
    for (int i = 0; i < p.count && slot < 0; ++i) {
      if (PyUnicode_CompareWithASCIIString(name, p.names[i]) == 0) slot = i;
    }
    if (slot < 0) {
      PyErr_Format(PyExc_TypeError, "%s.%s() got an unexpected keyword argument '%U'", p.owner, p.method, name);
      throw py::error_already_set();
    }
    if (slots[slot] != nullptr) {
      PyErr_Format(PyExc_TypeError, "%s.%s() got multiple values for argument '%s'", p.owner, p.method, p.names[slot]);
      throw py::error_already_set();
    }
    slots[slot] = args[nargs + k];
  }
  for (int i = 0; i < p.required; ++i) {
    if (slots[i] == nullptr) {
      PyErr_Format(PyExc_TypeError, "%s.%s() missing required argument '%s'", p.owner, p.method, p.names[i]);
      throw py::error_already_set();
    }
  }
}

int64_t integer(PyObject* value, const char* call, const char* what, const char* owner) {
  if (PyLong_CheckExact(value)) {
    int overflow = 0;
    long long number = PyLong_AsLongLongAndOverflow(value, &overflow);
    if (overflow != 0)
      throw rma::UsageError(std::string("rma: ") + owner + "." + call + ": " + what + " is out of range");
    return number;
  }
  if (PyBool_Check(value) || is_enum_constant(value) || !PyIndex_Check(value)) {
    type_error(std::string("rma: ") + owner + "." + call + ": " + what + " must be an integer, not " +
               type_name(value));
  }
  py::object number = py::reinterpret_steal<py::object>(PyNumber_Index(value));
  if (!number) throw py::error_already_set();
  return integer(number.ptr(), call, what, owner);
}

bool is_array(PyObject* value) { return py::detail::npy_api::get().PyArray_Check_(value); }

void check_plain(PyObject* dtype, const char* call, const char* role) {
  auto described = py::reinterpret_borrow<py::dtype>(dtype);
  if ((described.flags() & 0x01 /* NPY_ITEM_REFCOUNT: holds Python objects */) != 0 || described.itemsize() == 0) {
    type_error(std::string("rma: win.") + call + ": " + role + " dtype " + py::str(described).cast<std::string>() +
               " holds Python objects or has no size; windows take plain fixed-size data");
  }
}

Operand from_array(PyObject* array, const TargetLayout& target, PyObject* expected, bool raw_ok, bool writable,
                   const char* call, const char* role) {
  const auto& api = py::detail::npy_api::get();
  auto* header = py::detail::array_proxy(array);
  PyObject* dtype = header->descr;
  Operand out;
  if (dtype == expected || api.PyArray_EquivTypes_(dtype, expected)) {
    out.type = constants::element_type_of(expected);
  } else if (raw_ok && target.raw) {
    check_plain(dtype, call, role);
    out.type = constants::element_type_of(dtype);
  } else {
    check_plain(dtype, call, role);
    type_error(std::string("rma: win.") + call + ": " + role + " dtype " + py::str(dtype).cast<std::string>() +
               " does not match the target window's " + py::str(expected).cast<std::string>());
  }
  if (writable && (header->flags & py::detail::npy_api::NPY_ARRAY_WRITEABLE_) == 0) {
    throw rma::UsageError(std::string("rma: win.") + call + ": the " + role + " array is not writable");
  }
  out.array = py::reinterpret_borrow<py::object>(array);
  if ((header->flags & py::detail::npy_api::NPY_ARRAY_C_CONTIGUOUS_) == 0) {
    // A copy in C order: the origin's elements as they are now, or a result's stand-in whose
    // data the synchronization copies back (the caller arranges that).
    out.array = py::reinterpret_steal<py::object>(api.PyArray_NewCopy_(array, 0 /* NPY_CORDER */));
    if (!out.array) throw py::error_already_set();
    header = py::detail::array_proxy(out.array.ptr());
  }
  out.dtype = header->descr;
  out.itemsize = static_cast<uint64_t>(py::reinterpret_borrow<py::dtype>(out.dtype).itemsize());
  uint64_t elements = 1;
  for (int i = 0; i < header->nd; ++i) elements *= static_cast<uint64_t>(header->dimensions[i]);
  out.data = header->data;
  out.elements = elements;
  out.bytes = elements * out.itemsize;
  return out;
}

bool scalar(PyObject* value, rma::ElementType type, std::array<std::byte, 16>& out, const char* call) {
  using rma::ElementType;
  bool is_bool = PyBool_Check(value), is_int = PyLong_Check(value) && !is_bool;
  bool is_float = PyFloat_Check(value), is_complex = PyComplex_Check(value);
  if (!(is_bool || is_int || is_float || is_complex) || is_enum_constant(value)) return false;
  std::optional<rma::NumberKind> element = rma::number_kind(type);
  if (!element) return false;  // raw bytes: the general conversion (Python)
  rma::NumberKind kind = is_bool    ? rma::NumberKind::Bool
                         : is_int   ? rma::NumberKind::Integer
                         : is_float ? rma::NumberKind::Real
                                    : rma::NumberKind::Complex;
  if (!rma::takes(*element, kind)) {
    type_error(std::string("rma: win.") + call + ": a Python " + type_name(value) + " is not a value of " +
               rma::describe(type) + " (pass an array of that dtype to convert on purpose)");
  }
  // From here on the number is of a kind the element takes (number_kinds.hpp); what is left to
  // check is whether it fits.
  auto store = [&](auto element) { std::memcpy(out.data(), &element, sizeof element); };
  auto too_big = [&] {
    throw rma::UsageError(std::string("rma: win.") + call + ": " + py::repr(value).cast<std::string>() +
                          " does not fit " + rma::describe(type));
  };
  auto integral = [&](auto tag) {
    using T = decltype(tag);
    int overflow = 0;
    if constexpr (std::is_signed_v<T>) {
      long long number = PyLong_AsLongLongAndOverflow(value, &overflow);
      if (overflow != 0 || number < std::numeric_limits<T>::min() || number > std::numeric_limits<T>::max()) too_big();
      store(static_cast<T>(number));
    } else {
      unsigned long long number = PyLong_AsUnsignedLongLong(value);
      if (PyErr_Occurred()) {  // negative, or too large
        PyErr_Clear();
        too_big();
      }
      if (number > std::numeric_limits<T>::max()) too_big();
      store(static_cast<T>(number));
    }
  };
  auto real = [&]() -> double {  // an int or a float
    if (is_float) return PyFloat_AS_DOUBLE(value);
    double number = PyLong_AsDouble(value);
    if (number == -1.0 && PyErr_Occurred()) {
      PyErr_Clear();
      too_big();
    }
    return number;
  };
  switch (type) {
    case ElementType::Bool: store(static_cast<bool>(value == Py_True)); return true;
    case ElementType::Int8: integral(int8_t{}); return true;
    case ElementType::UInt8: integral(uint8_t{}); return true;
    case ElementType::Int16: integral(int16_t{}); return true;
    case ElementType::UInt16: integral(uint16_t{}); return true;
    case ElementType::Int32: integral(int32_t{}); return true;
    case ElementType::UInt32: integral(uint32_t{}); return true;
    case ElementType::Int64: integral(int64_t{}); return true;
    case ElementType::UInt64: integral(uint64_t{}); return true;
    case ElementType::Float32: store(static_cast<float>(real())); return true;
    case ElementType::Float64: store(real()); return true;
    case ElementType::LongDouble: store(static_cast<long double>(real())); return true;
    case ElementType::Complex64:
    case ElementType::Complex128: {
      std::complex<double> number =
          is_complex ? std::complex<double>(PyComplex_RealAsDouble(value), PyComplex_ImagAsDouble(value))
                     : std::complex<double>(real(), 0.0);
      if (type == ElementType::Complex64) {
        store(std::complex<float>(number));
      } else {
        store(number);
      }
      return true;
    }
    case ElementType::Bytes: return false;
  }
  return false;
}

}  // namespace arguments
