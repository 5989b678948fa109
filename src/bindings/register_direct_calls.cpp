// The fast path from Python to the core: _core.DirectCalls and _core.fast_method.
//
// rma.Window gives each window instance fast fronts for its hottest methods: the calls (put,
// get, accumulate, get_accumulate, fetch_and_op, compare_and_swap, flush) and the epochs
// (fence, post, start, complete, wait, lock, unlock). A front is a vectorcall object: it
// parses the arguments itself and calls the core without a Python frame in between; a call
// reads the NumPy arrays' headers and hands the core one contiguous run, so that a small put
// or fetch_and_op from Python costs about what a bare call costs. It takes only calls whose arguments need no conversion (C-contiguous arrays of
// the target's dtype, int ranks and displacements, no target=); anything else goes, untouched,
// to the class's method, the general path with its conversions and its errors. Direct calls
// complete before they return, so no buffer needs keeping alive.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <array>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "python_errors.hpp"
#include "window/window.hpp"

namespace py = pybind11;

namespace {

using rma::ElementType;

// What the fast path knows of one target rank's window.
struct TargetLayout {
  PyObject* dtype;    // the target's dtype (a canonical NumPy dtype object)
  ElementType type;   // its element type (Bytes if none)
  uint64_t itemsize;  // its element size
  uint64_t unit;      // the displacement unit
  bool raw;           // a uint8 window: calls by displacement may bring any dtype
};

// An argument array as the fast path takes it.
struct Operand {
  char* data;
  ElementType type;
  uint64_t elements;
  uint64_t bytes;
  PyObject* dtype;
};

// A Python int's value, if it fits a long.
bool fits_long(PyObject* value, long& out) {
  int overflow = 0;
  out = PyLong_AsLongAndOverflow(value, &overflow);
  if (out == -1 && PyErr_Occurred()) {
    PyErr_Clear();
    return false;
  }
  return overflow == 0;
}

// An exact Python int that fits a long (bools, NumPy integers: the general path).
bool small_int(PyObject* value, long& out) { return PyLong_CheckExact(value) && fits_long(value, out); }

// An int or an int subclass such as rma.Op (not a bool).
bool small_int_like(PyObject* value, long& out) {
  return PyLong_Check(value) && !PyBool_Check(value) && fits_long(value, out);
}

// A Python int or float as one element of type, when the conversion is exact (the general
// path converts anything else, and raises what NumPy raises).
bool scalar_element(PyObject* value, ElementType type, std::array<std::byte, 16>& out) {
  auto store = [&](auto element) {
    std::memcpy(out.data(), &element, sizeof element);
    return true;
  };
  bool is_int = PyLong_CheckExact(value), is_float = PyFloat_CheckExact(value);
  long long integer = 0;
  if (is_int) {
    int overflow = 0;
    integer = PyLong_AsLongLongAndOverflow(value, &overflow);
    if (overflow != 0 || (integer == -1 && PyErr_Occurred())) {
      PyErr_Clear();
      return false;
    }
  }
  auto in_range = [&](auto tag) {
    using T = decltype(tag);
    return is_int && integer >= static_cast<long long>(std::numeric_limits<T>::min()) &&
           (integer < 0 || static_cast<unsigned long long>(integer) <= std::numeric_limits<T>::max());
  };
  switch (type) {
    case ElementType::Int8: return in_range(int8_t{}) && store(static_cast<int8_t>(integer));
    case ElementType::UInt8: return in_range(uint8_t{}) && store(static_cast<uint8_t>(integer));
    case ElementType::Int16: return in_range(int16_t{}) && store(static_cast<int16_t>(integer));
    case ElementType::UInt16: return in_range(uint16_t{}) && store(static_cast<uint16_t>(integer));
    case ElementType::Int32: return in_range(int32_t{}) && store(static_cast<int32_t>(integer));
    case ElementType::UInt32: return in_range(uint32_t{}) && store(static_cast<uint32_t>(integer));
    case ElementType::Int64: return is_int && store(static_cast<int64_t>(integer));
    case ElementType::UInt64: return is_int && integer >= 0 && store(static_cast<uint64_t>(integer));
    case ElementType::Float32:
    case ElementType::Float64: {
      constexpr long long kExact = 1LL << 53;  // ints a double holds exactly
      double real;
      if (is_float) {
        real = PyFloat_AS_DOUBLE(value);
      } else if (is_int && integer >= -kExact && integer <= kExact) {
        real = static_cast<double>(integer);
      } else {
        return false;
      }
      return type == ElementType::Float32 ? store(static_cast<float>(real)) : store(real);
    }
    default:
      return false;  // bool, complex, raw bytes
  }
}

class DirectCalls {
 public:
  // layout: per rank (dtype, disp_unit, raw). element_dtypes: the canonical dtype object of
  // each ElementType, in its order (window/reduce.hpp).
  DirectCalls(std::shared_ptr<rma::Window> window, const py::list& layout, const py::list& element_dtypes,
              bool no_locks)
      : window_(std::move(window)), no_locks_(no_locks) {
    for (py::handle dtype : element_dtypes) element_dtypes_.push_back(py::reinterpret_borrow<py::object>(dtype));
    for (py::handle entry : layout) {
      auto item = entry.cast<py::tuple>();
      py::object dtype = item[0];
      keep_.push_back(dtype);
      ElementType type = element_type_of(dtype.ptr());
      uint64_t itemsize = type == ElementType::Bytes ? dtype.attr("itemsize").cast<uint64_t>() : rma::element_size(type);
      targets_.push_back({dtype.ptr(), type, itemsize, item[1].cast<uint64_t>(), item[2].cast<bool>()});
    }
  }

  bool put(PyObject* origin, long rank, long disp) {
    uint64_t offset;
    Operand data;
    if (!locate(rank, disp, offset) || !operand(origin, targets_[rank], false, data)) return false;
    return run(data.bytes, [&] { return window_->put_direct(static_cast<int>(rank), data.data, offset, data.bytes); });
  }

  bool get(PyObject* result, long rank, long disp) {
    uint64_t offset;
    Operand out;
    if (!locate(rank, disp, offset) || !operand(result, targets_[rank], true, out)) return false;
    return run(out.bytes, [&] { return window_->get_direct(static_cast<int>(rank), out.data, offset, out.bytes); });
  }

  // accumulate (result null), get_accumulate, and fetch_and_op (single: one element only).
  // With a one-element result, the origin may also be a Python int or float.
  bool reduce(PyObject* origin, PyObject* result, long rank, long disp, long op, bool single) {
    uint64_t offset;
    Operand data, out{};
    std::array<std::byte, 16> scalar;
    if (op < 0 || op > static_cast<long>(rma::ReduceOp::NoOp) || !locate(rank, disp, offset)) return false;
    if (result != nullptr && !operand(result, targets_[rank], true, out)) return false;
    if (!operand(origin, targets_[rank], false, data)) {
      if (result == nullptr || out.elements != 1 || !scalar_element(origin, out.type, scalar)) return false;
      data = Operand{reinterpret_cast<char*>(scalar.data()), out.type, 1, out.bytes, out.dtype};
    }
    if (result != nullptr && (out.dtype != data.dtype || out.elements != data.elements)) return false;
    if (data.type == ElementType::Bytes || (single && data.elements != 1)) return false;
    return run(data.bytes, [&] {
      return window_->get_accumulate_direct(static_cast<int>(rank), static_cast<rma::ReduceOp>(op), data.type,
                                            data.data, result ? out.data : nullptr, offset, data.bytes);
    });
  }

  // origin and compare may also be Python ints.
  bool compare_and_swap(PyObject* origin, PyObject* compare, PyObject* result, long rank, long disp) {
    uint64_t offset;
    Operand data, comparand, out;
    std::array<std::byte, 16> scalars[2];
    if (!locate(rank, disp, offset) || !operand(result, targets_[rank], true, out) || out.elements != 1) return false;
    Operand* operands[2] = {&data, &comparand};
    PyObject* given[2] = {origin, compare};
    for (int i = 0; i < 2; ++i) {
      if (operand(given[i], targets_[rank], false, *operands[i])) continue;
      if (!scalar_element(given[i], out.type, scalars[i])) return false;
      *operands[i] = Operand{reinterpret_cast<char*>(scalars[i].data()), out.type, 1, out.bytes, out.dtype};
    }
    if (data.elements != 1 || comparand.elements != 1 || out.elements != 1 || comparand.dtype != data.dtype ||
        out.dtype != data.dtype) {
      return false;
    }
    return window_->compare_and_swap_direct(static_cast<int>(rank), data.type, data.data, comparand.data, out.data,
                                            offset);
  }

  bool flush(long rank) { return rank >= 0 && rank < static_cast<long>(targets_.size()) && window_->flush_direct(static_cast<int>(rank)); }

  rma::Window& window() { return *window_; }
  bool no_locks() const { return no_locks_; }

 private:
  // Large copies let other Python threads run meanwhile.
  static constexpr uint64_t kReleaseGilBytes = 256 * 1024;

  template <typename Call>
  static bool run(uint64_t bytes, Call call) {
    if (bytes < kReleaseGilBytes) return call();
    py::gil_scoped_release release;
    return call();
  }

  bool locate(long rank, long disp, uint64_t& offset) const {
    if (rank < 0 || rank >= static_cast<long>(targets_.size()) || disp < 0) return false;
    uint64_t unit = targets_[rank].unit;
    if (static_cast<uint64_t>(disp) > UINT64_MAX / unit) return false;
    offset = static_cast<uint64_t>(disp) * unit;
    return true;
  }

  ElementType element_type_of(PyObject* dtype) const {
    for (size_t i = 0; i < element_dtypes_.size(); ++i) {
      if (element_dtypes_[i].ptr() == dtype) return static_cast<ElementType>(i);
    }
    return ElementType::Bytes;
  }

  // array as a C-contiguous NumPy array whose dtype the target takes (writable if asked).
  bool operand(PyObject* array, const TargetLayout& target, bool writable, Operand& out) const {
    const auto& api = py::detail::npy_api::get();
    if (!api.PyArray_Check_(array)) return false;
    auto* header = py::detail::array_proxy(array);
    int needed = py::detail::npy_api::NPY_ARRAY_C_CONTIGUOUS_ | (writable ? py::detail::npy_api::NPY_ARRAY_WRITEABLE_ : 0);
    if ((header->flags & needed) != needed) return false;
    if (header->descr == target.dtype) {
      out.type = target.type;
      out.bytes = target.itemsize;
    } else {
      // Another dtype: only into a raw window, and only a dtype of the table (canonical objects).
      ElementType type = element_type_of(header->descr);
      if (!target.raw || type == ElementType::Bytes) return false;
      out.type = type;
      out.bytes = rma::element_size(type);
    }
    uint64_t elements = 1;
    for (int i = 0; i < header->nd; ++i) elements *= static_cast<uint64_t>(header->dimensions[i]);
    out.data = header->data;
    out.elements = elements;
    out.bytes *= elements;
    out.dtype = header->descr;
    return true;
  }

  std::shared_ptr<rma::Window> window_;
  bool no_locks_;  // the window's info hint: lock and lock_all refuse (the general path says so)
  std::vector<py::object> element_dtypes_, keep_;
  std::vector<TargetLayout> targets_;
};

// ---- the fronts ----

enum class Call {
  Put, Get, Accumulate, GetAccumulate, FetchAndOp, CompareAndSwap, Flush,  // data
  Fence, Post, Start, Complete, Wait, Lock, Unlock                          // epochs
};

// Each call's parameters as the class's method names them, and how many are required. Ranks,
// displacements, ops, lock types and modes are ints; "target" (keyword-only, for the calls
// that have it) must be None for the fast path.
struct Signature {
  const char* name;
  std::array<const char*, 6> parameters;
  int count;
  int required;
  bool has_target;
};

const Signature kSignatures[] = {
    {"put", {"origin", "target_rank", "target_disp"}, 3, 2, true},
    {"get", {"result", "target_rank", "target_disp"}, 3, 2, true},
    {"accumulate", {"origin", "target_rank", "target_disp", "op"}, 4, 2, true},
    {"get_accumulate", {"origin", "result", "target_rank", "target_disp", "op"}, 5, 3, true},
    {"fetch_and_op", {"origin", "result", "target_rank", "target_disp", "op"}, 5, 3, false},
    {"compare_and_swap", {"origin", "compare", "result", "target_rank", "target_disp"}, 5, 4, false},
    {"flush", {"rank"}, 1, 1, false},
    {"fence", {"mode"}, 1, 0, false},
    {"post", {"group", "mode"}, 2, 1, false},
    {"start", {"group", "mode"}, 2, 1, false},
    {"complete", {}, 0, 0, false},
    {"wait", {}, 0, 0, false},
    {"lock", {"rank", "lock_type", "mode"}, 3, 1, false},
    {"unlock", {"rank"}, 1, 1, false},
};

const Signature& signature(Call call) { return kSignatures[static_cast<int>(call)]; }

struct FastMethod {
  PyObject_HEAD
  vectorcallfunc vectorcall;
  DirectCalls* direct;
  PyObject* direct_owner;  // the DirectCalls Python object, kept alive
  PyObject* function;      // the class's method (a plain function), the general path
  PyObject* window_ref;    // a weak reference to the window (no cycle through its __dict__)
  Call call;
};

PyObject* interned(const char* text) {
  PyObject* name = PyUnicode_InternFromString(text);
  if (name == nullptr) throw py::error_already_set();
  return name;  // kept for the life of the process
}

// window.<name> (a new reference), or null with no error set.
PyObject* attribute(PyObject* window, PyObject* name) {
  PyObject* value = PyObject_GetAttr(window, name);
  if (value == nullptr) PyErr_Clear();
  return value;
}

// Whether the window has Python-side bookkeeping for target (or any target, when target is
// null): buffers kept alive, results to copy back. Then the general path must synchronize.
bool has_pending(PyObject* window, PyObject* target) {
  static PyObject* name = interned("_pending");
  PyObject* pending = attribute(window, name);
  if (pending == nullptr) return true;
  int found = target == nullptr ? PyObject_IsTrue(pending) : PyDict_Contains(pending, target);
  Py_DECREF(pending);
  if (found < 0) PyErr_Clear();
  return found != 0;
}

// The epoch object the window hands out for key (a new reference), or null if it has none yet.
PyObject* cached_epoch(PyObject* window, PyObject* key) {
  static PyObject* name = interned("_epochs");
  PyObject* epochs = attribute(window, name);
  if (epochs == nullptr) return nullptr;
  PyObject* epoch = PyDict_GetItemWithError(epochs, key);  // borrowed
  Py_XINCREF(epoch);
  Py_DECREF(epochs);
  if (epoch == nullptr) PyErr_Clear();
  return epoch;
}

// A list of exact ints (post and start's group); false for anything else.
bool rank_list(PyObject* group, std::vector<int>& ranks) {
  if (!PyList_CheckExact(group)) return false;
  Py_ssize_t count = PyList_GET_SIZE(group);
  ranks.resize(static_cast<size_t>(count));
  for (Py_ssize_t i = 0; i < count; ++i) {
    long rank;
    if (!small_int(PyList_GET_ITEM(group, i), rank) || rank < INT32_MIN || rank > INT32_MAX) return false;
    ranks[static_cast<size_t>(i)] = static_cast<int>(rank);
  }
  return true;
}

// An optional int argument (absent: fallback).
bool int_or(PyObject* value, long fallback, long& out) {
  if (value == nullptr) {
    out = fallback;
    return true;
  }
  return small_int(value, out);
}

constexpr long kAllModes = rma::kModeNoCheck | rma::kModeNoStore | rma::kModeNoPut | rma::kModeNoPrecede |
                           rma::kModeNoSucceed;

// Runs a core call that may block with the GIL released; a core exception becomes the Python
// exception the general path would raise. False: an error is set.
template <class Body>
bool blocking(Body&& body) {
  std::exception_ptr failure;
  Py_BEGIN_ALLOW_THREADS
  try {
    body();
  } catch (...) {
    failure = std::current_exception();
  }
  Py_END_ALLOW_THREADS
  if (!failure) return true;
  if (!set_python_error(failure)) {
    try {
      std::rethrow_exception(failure);
    } catch (const std::exception& error) {
      PyErr_SetString(PyExc_RuntimeError, error.what());
    } catch (...) {
      PyErr_SetString(PyExc_RuntimeError, "rma: unknown error in the core");
    }
  }
  return false;
}

enum class Outcome { Done, General, Failed };

// The epoch calls: the core call itself, when the arguments are plain and nothing Python-side
// must be finished first. result: what the call returns (an epoch object, or None).
Outcome try_epoch(FastMethod* self, PyObject* window, PyObject** slots, PyObject*& result) {
  static PyObject* fence_key = interned("fence");
  static PyObject* post_key = interned("post");
  static PyObject* start_key = interned("start");
  rma::Window& core = self->direct->window();
  long mode = 0, rank = 0, type = rma::kLockExclusive;
  std::vector<int> group;
  PyObject* key = nullptr;  // of the epoch object to return
  switch (self->call) {
    case Call::Fence:
      if (!int_or(slots[0], 0, mode) || (mode & ~kAllModes) || has_pending(window, nullptr)) return Outcome::General;
      key = fence_key;
      break;
    case Call::Post:
    case Call::Start:
      if (!rank_list(slots[0], group) || !int_or(slots[1], 0, mode) || (mode & ~kAllModes)) return Outcome::General;
      key = self->call == Call::Post ? post_key : start_key;
      break;
    case Call::Complete:
      if (has_pending(window, nullptr)) return Outcome::General;
      break;
    case Call::Wait:
      break;
    case Call::Lock:
      if (self->direct->no_locks() || !small_int(slots[0], rank) || !int_or(slots[1], rma::kLockExclusive, type) ||
          (type != rma::kLockExclusive && type != rma::kLockShared) || !int_or(slots[2], 0, mode) ||
          (mode & ~kAllModes) || rank < 0 || rank >= core.size()) {
        return Outcome::General;
      }
      key = slots[0];  // lock's epochs are cached by rank
      break;
    case Call::Unlock:
      if (!small_int(slots[0], rank) || rank < 0 || rank >= core.size() || has_pending(window, slots[0])) {
        return Outcome::General;
      }
      break;
    default:
      return Outcome::General;
  }
  PyObject* epoch = nullptr;
  if (key != nullptr && (epoch = cached_epoch(window, key)) == nullptr) return Outcome::General;
  bool ok = blocking([&] {
    switch (self->call) {
      case Call::Fence: core.fence(static_cast<int>(mode)); break;
      case Call::Post: core.post(group, static_cast<int>(mode)); break;
      case Call::Start: core.start(group, static_cast<int>(mode)); break;
      case Call::Complete: core.complete(); break;
      case Call::Wait: core.wait(); break;
      case Call::Lock: core.lock(static_cast<int>(rank), static_cast<int>(type), static_cast<int>(mode)); break;
      case Call::Unlock: core.unlock(static_cast<int>(rank)); break;
      default: break;
    }
  });
  if (!ok) {
    Py_XDECREF(epoch);
    return Outcome::Failed;
  }
  if (epoch == nullptr) {
    Py_INCREF(Py_None);
    epoch = Py_None;
  }
  result = epoch;
  return Outcome::Done;
}

// The data calls: true when the direct path took the call.
bool try_data(FastMethod* self, PyObject* window, PyObject** slots) {
  DirectCalls& direct = *self->direct;
  long rank, disp = 0, op = 0;  // op 0 is rma.Op.SUM, the default
  switch (self->call) {
    case Call::Put:
    case Call::Get:
      if (!small_int(slots[1], rank) || !int_or(slots[2], 0, disp)) return false;
      return self->call == Call::Put ? direct.put(slots[0], rank, disp) : direct.get(slots[0], rank, disp);
    case Call::Accumulate:
      if (!small_int(slots[1], rank) || !int_or(slots[2], 0, disp) || (slots[3] && !small_int_like(slots[3], op))) {
        return false;
      }
      return direct.reduce(slots[0], nullptr, rank, disp, op, false);
    case Call::GetAccumulate:
    case Call::FetchAndOp:
      if (!small_int(slots[2], rank) || !int_or(slots[3], 0, disp) || (slots[4] && !small_int_like(slots[4], op))) {
        return false;
      }
      return direct.reduce(slots[0], slots[1], rank, disp, op, self->call == Call::FetchAndOp);
    case Call::CompareAndSwap:
      if (!small_int(slots[3], rank) || !int_or(slots[4], 0, disp)) return false;
      return direct.compare_and_swap(slots[0], slots[1], slots[2], rank, disp);
    case Call::Flush:
      return small_int(slots[0], rank) && !has_pending(window, nullptr) && direct.flush(rank);
    default:
      return false;
  }
}

// Fills slots from positional and keyword arguments; false if they do not fit the fast path.
bool parse(FastMethod* self, PyObject* const* args, size_t positional, PyObject* keywords, PyObject** slots) {
  const Signature& sig = signature(self->call);
  if (positional > static_cast<size_t>(sig.count)) return false;
  for (size_t i = 0; i < positional; ++i) slots[i] = args[i];
  Py_ssize_t keyword_count = keywords ? PyTuple_GET_SIZE(keywords) : 0;
  for (Py_ssize_t k = 0; k < keyword_count; ++k) {
    PyObject* name = PyTuple_GET_ITEM(keywords, k);
    PyObject* value = args[positional + k];
    if (sig.has_target && PyUnicode_CompareWithASCIIString(name, "target") == 0) {
      if (value != Py_None) return false;
      continue;
    }
    int slot = -1;
    for (int i = 0; i < sig.count; ++i) {
      if (PyUnicode_CompareWithASCIIString(name, sig.parameters[i]) == 0) slot = i;
    }
    if (slot < 0 || slots[slot] != nullptr) return false;
    slots[slot] = value;
  }
  for (int i = 0; i < sig.required; ++i) {
    if (slots[i] == nullptr) return false;
  }
  return true;
}

PyObject* fast_method_call(PyObject* callable, PyObject* const* args, size_t nargsf, PyObject* keywords) {
  auto* self = reinterpret_cast<FastMethod*>(callable);
  size_t positional = PyVectorcall_NARGS(nargsf);
  PyObject* window = PyWeakref_GetObject(self->window_ref);  // borrowed
  if (window == Py_None) {
    PyErr_SetString(PyExc_ReferenceError, "rma: the window of this method is gone");
    return nullptr;
  }
  PyObject* slots[6] = {};
  if (parse(self, args, positional, keywords, slots)) {
    if (self->call >= Call::Fence) {
      PyObject* result = nullptr;
      Py_INCREF(window);  // alive through the call, whatever the user's code does meanwhile
      Outcome outcome = try_epoch(self, window, slots, result);
      Py_DECREF(window);
      if (outcome == Outcome::Done) return result;
      if (outcome == Outcome::Failed) return nullptr;
    } else {
      bool done;
      try {
        done = try_data(self, window, slots);
      } catch (...) {
        if (!set_python_error(std::current_exception())) PyErr_SetString(PyExc_RuntimeError, "rma: error in the core");
        return nullptr;
      }
      if (done) Py_RETURN_NONE;
    }
  }
  // The general path: the class's method, called with the window and the same arguments.
  Py_ssize_t keyword_count = keywords ? PyTuple_GET_SIZE(keywords) : 0;
  std::vector<PyObject*> with_window(1 + positional + static_cast<size_t>(keyword_count));
  with_window[0] = window;
  std::copy(args, args + positional + keyword_count, with_window.begin() + 1);
  Py_INCREF(window);
  PyObject* result = PyObject_Vectorcall(self->function, with_window.data(), positional + 1, keywords);
  Py_DECREF(window);
  return result;
}

void fast_method_dealloc(PyObject* object) {
  auto* self = reinterpret_cast<FastMethod*>(object);
  Py_XDECREF(self->direct_owner);
  Py_XDECREF(self->function);
  Py_XDECREF(self->window_ref);
  Py_TYPE(object)->tp_free(object);
}

PyObject* fast_method_repr(PyObject* object) {
  auto* self = reinterpret_cast<FastMethod*>(object);
  PyObject* window = PyWeakref_GetObject(self->window_ref);
  return PyUnicode_FromFormat("<fast path of %s of %R>", signature(self->call).name, window);
}

PyObject* fast_method_doc(PyObject* object, void*) {
  return PyObject_GetAttrString(reinterpret_cast<FastMethod*>(object)->function, "__doc__");
}

PyGetSetDef fast_method_getset[] = {
    {"__doc__", fast_method_doc, nullptr, nullptr, nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

PyTypeObject* fast_method_type() {
  static PyTypeObject type = [] {
    PyTypeObject t{PyVarObject_HEAD_INIT(nullptr, 0)};
    t.tp_name = "rma._core.FastMethod";
    t.tp_basicsize = sizeof(FastMethod);
    t.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL;
    t.tp_vectorcall_offset = offsetof(FastMethod, vectorcall);
    t.tp_call = PyVectorcall_Call;
    t.tp_dealloc = fast_method_dealloc;
    t.tp_repr = fast_method_repr;
    t.tp_getset = fast_method_getset;
    return t;
  }();
  return &type;
}

}  // namespace

void register_direct_calls(py::module_& m) {
  if (PyType_Ready(fast_method_type()) < 0) throw py::error_already_set();
  py::class_<DirectCalls>(m, "DirectCalls")
      .def(py::init<std::shared_ptr<rma::Window>, const py::list&, const py::list&, bool>(), py::arg("window"),
           py::arg("layout"), py::arg("element_dtypes"), py::arg("no_locks"));
  m.def(
      "fast_method",
      [](py::object direct, const std::string& name, py::function function, py::object window) {
        int index = -1;
        for (size_t i = 0; i < std::size(kSignatures); ++i) {
          if (name == kSignatures[i].name) index = static_cast<int>(i);
        }
        if (index < 0) throw py::value_error("rma: no fast path for " + name);
        auto* self = PyObject_New(FastMethod, fast_method_type());
        if (self == nullptr) throw py::error_already_set();
        self->vectorcall = fast_method_call;
        self->direct = direct.cast<DirectCalls*>();
        self->direct_owner = direct.release().ptr();
        self->function = function.release().ptr();
        self->window_ref = PyWeakref_NewRef(window.ptr(), nullptr);
        self->call = static_cast<Call>(index);
        if (self->window_ref == nullptr) {
          Py_DECREF(self);
          throw py::error_already_set();
        }
        return py::reinterpret_steal<py::object>(reinterpret_cast<PyObject*>(self));
      },
      py::arg("direct"), py::arg("name"), py::arg("function"), py::arg("window"),
      "A window's fast front for one of its methods (see register_direct_calls.cpp).");
}
