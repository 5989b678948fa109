// rma._core.Window: every window call from Python enters here once. A method parses its
// arguments (arguments.hpp), lets the core's rules check them (ranks, modes, ops against
// dtypes, epochs, ranges: src/core/window), and calls the core: a plain call to a same-host
// target takes the core's direct path without releasing the GIL; anything else releases it
// around the core's general path. Buffers of calls not yet complete stay in the window's
// KeepAlive until its own synchronization calls finish them. Only what needs NumPy's Python
// API goes back to Python, through two hooks of the subclass rma.Window: `_region` (a target=
// index into a region) and `_origin_of` (a list, a NumPy scalar, or another non-array origin
// into an array).
#include "window_object.hpp"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <optional>

#include "constants.hpp"
#include "errors.hpp"
#include "method_object.hpp"
#include "python_errors.hpp"
#include "window_docs.hpp"

namespace py = pybind11;

namespace {

using arguments::Operand;
using arguments::Parameters;
using arguments::TargetLayout;

// Copies from 256 KiB on let other Python threads run meanwhile.
constexpr uint64_t kReleaseGilBytes = 256 * 1024;

PyObject* region_hook = nullptr;  // "_region"
PyObject* origin_hook = nullptr;  // "_origin_of"

WindowState& state_of(WindowObject* self) { return *self->state; }
rma::Window& core_of(WindowObject* self) { return *self->state->core; }

// Runs body; a C++ exception becomes the Python exception of rma.errors (or TypeError,
// ValueError) and the method returns null.
template <class Body>
PyObject* guarded(Body&& body) {
  try {
    return body();
  } catch (py::error_already_set& error) {
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

// Releases the GIL around body only for large copies.
template <class Body>
bool quick(uint64_t bytes, Body&& body) {
  if (bytes < kReleaseGilBytes) return body();
  bool done = false;
  released([&] { done = body(); });
  return done;
}

void check_open(WindowObject* self, const char* call) {
  rma::Window& core = core_of(self);
  if (core.freed()) throw rma::RmaError("rma: " + core.where(call, -1) + ": the window was freed");
}

bool given(PyObject* value) { return value != nullptr && value != Py_None; }

// A rank argument, checked by the core's rule.
int rank_of(WindowObject* self, PyObject* value, const char* call, const char* what, bool allow_null) {
  int64_t rank = arguments::integer(value, call, what);
  core_of(self).check_rank(call, rank, allow_null);
  return static_cast<int>(rank);
}

// A data call's target= argument, before anything else is made of it.
void check_target(WindowObject* self, PyObject* target, const char* call) {
  if (given(target) && state_of(self).dynamic) {
    throw rma::ArgumentTypeError(std::string("rma: win.") + call +
                                 ": a dynamic window takes byte displacements, not target=");
  }
}

// What a call to rank addresses (PROC_NULL: this rank's own layout, so that its arguments are
// checked as any call's are).
const TargetLayout& layout_of(WindowObject* self, int rank) {
  return state_of(self).targets[rank == rma::kProcNull ? core_of(self).rank() : rank];
}

rma::ReduceOp op_of(PyObject* value, const char* call) {
  rma::ReduceOp op = rma::ReduceOp::Sum;
  if (value != nullptr && !constants::op_of(value, op)) {
    throw rma::ArgumentTypeError(std::string("rma: win.") + call +
                                 ": op must be an rma.Op (rma.SUM, rma.MAX...), not " + Py_TYPE(value)->tp_name);
  }
  return op;
}

long mode_of(PyObject* value, const char* call) {
  long flags = 0;
  if (value != nullptr && !constants::mode_of(value, flags)) {
    throw rma::ArgumentTypeError(std::string("rma: win.") + call + ": mode must be rma.Mode flags or 0, not " +
                                 Py_TYPE(value)->tp_name);
  }
  return flags;
}

uint64_t offset_of(WindowObject* self, int rank, PyObject* disp, const char* call) {
  int64_t displacement = disp != nullptr ? arguments::integer(disp, call, "target_disp") : 0;
  if (rank == rma::kProcNull) return 0;
  if (displacement < 0) {
    throw rma::RangeError("rma: " + core_of(self).where(call, rank) + ": negative displacement " +
                          std::to_string(displacement));
  }
  uint64_t unit = layout_of(self, rank).unit;
  if (static_cast<uint64_t>(displacement) > std::numeric_limits<uint64_t>::max() / unit) {
    throw rma::RangeError("rma: " + core_of(self).where(call, rank) + ": displacement " + std::to_string(displacement) +
                          " lies beyond any window");
  }
  return static_cast<uint64_t>(displacement) * unit;
}

// The target region of a call: `operand`'s elements from the displacement on, or the region a
// target= index selects (the subclass's _region hook: NumPy's indexing rules).
rma::Region region_of(WindowObject* self, int rank, PyObject* disp, PyObject* target, const Operand& operand,
                      const char* call) {
  if (!given(target)) {
    uint64_t offset = offset_of(self, rank, disp, call);
    return rma::Region::contiguous(offset, operand.bytes,
                                   static_cast<uint32_t>(std::max<uint64_t>(operand.itemsize, 1)));
  }
  if (disp != nullptr && arguments::integer(disp, call, "target_disp") != 0) {
    throw rma::UsageError(std::string("rma: win.") + call + ": give either target_disp or target=, not both");
  }
  py::object name = py::str(call);
  py::object spec = py::reinterpret_steal<py::object>(
      PyObject_CallMethodObjArgs(reinterpret_cast<PyObject*>(self), region_hook, name.ptr(), py::int_(rank).ptr(),
                                 target, py::int_(operand.elements).ptr(), nullptr));
  if (!spec) throw py::error_already_set();
  auto [offset, element, dims] = spec.cast<std::tuple<uint64_t, uint32_t, std::vector<std::pair<uint64_t, int64_t>>>>();
  std::vector<rma::RegionDim> region_dims;
  for (const auto& [count, stride] : dims) region_dims.push_back({count, stride});
  return rma::Region(offset, element, std::move(region_dims));
}

// An origin (or compare) operand of `expected` dtype. Arrays are used as they are (copied if
// strided); Python numbers go into `scalar`; anything else through the _origin_of hook.
Operand origin_of(WindowObject* self, PyObject* value, const TargetLayout& layout, PyObject* expected, bool raw_ok,
                  std::array<std::byte, 16>& scalar, const char* call, const char* role) {
  if (arguments::is_array(value)) return arguments::from_array(value, layout, expected, raw_ok, false, call, role);
  rma::ElementType type = constants::element_type_of(expected);
  if (type != rma::ElementType::Bytes && arguments::scalar(value, type, scalar, call)) {
    Operand operand;
    operand.data = reinterpret_cast<char*>(scalar.data());
    operand.type = type;
    operand.itemsize = rma::element_size(type);
    operand.elements = 1;
    operand.bytes = operand.itemsize;
    operand.dtype = expected;
    return operand;
  }
  py::object name = py::str(call);
  py::object array = py::reinterpret_steal<py::object>(
      PyObject_CallMethodObjArgs(reinterpret_cast<PyObject*>(self), origin_hook, value, expected, name.ptr(), nullptr));
  if (!array) throw py::error_already_set();
  return arguments::from_array(array.ptr(), layout, expected, raw_ok, false, call, role);
}

struct Result {
  Operand operand;
  PyObject* given;  // the caller's array (borrowed: it is an argument of the call)
  bool stand_in() const { return operand.array.ptr() != given; }
};

Result result_of(PyObject* value, const TargetLayout& layout, bool raw_ok, const char* call) {
  if (!arguments::is_array(value)) {
    throw rma::ArgumentTypeError(std::string("rma: win.") + call + ": result must be a NumPy array, not " +
                                 Py_TYPE(value)->tp_name);
  }
  return Result{arguments::from_array(value, layout, layout.dtype.ptr(), raw_ok, true, call, "result"), value};
}

void single(const Operand& operand, const char* call, const char* role) {
  if (operand.elements != 1) {
    throw rma::UsageError(std::string("rma: win.") + call + ": " + role + " must hold exactly one element, not " +
                          std::to_string(operand.elements));
  }
}

void check_op(rma::ReduceOp op, const Operand& operand, const char* call) {
  if (operand.type == rma::ElementType::Bytes || !rma::op_fits(op, operand.type)) {
    throw rma::ArgumentTypeError(std::string("rma: win.") + call + ": " + rma::describe(op) + " does not apply to " +
                                 py::str(operand.dtype).cast<std::string>());
  }
}

// After the core took a call that may still be in flight: keep what it uses.
void keep(WindowObject* self, int rank, const Operand* origin, const Result* result) {
  if (rank == rma::kProcNull) return;  // moves nothing
  KeepAlive& held = state_of(self).held;
  if (origin != nullptr && origin->array) held.hold(rank, origin->array);
  if (result != nullptr) {
    held.hold(rank, result->operand.array);
    if (result->stand_in())
      held.copy_back(rank, py::reinterpret_borrow<py::object>(result->given), result->operand.array);
  }
}

// ---- the communication calls (slots: the parameters in signature order) ----

void put_body(WindowObject* self, PyObject** slot, int rank, const char* call) {
  check_target(self, slot[3], call);
  const TargetLayout& layout = layout_of(self, rank);
  std::array<std::byte, 16> scalar;
  Operand data = origin_of(self, slot[0], layout, layout.dtype.ptr(), !given(slot[3]), scalar, call, "origin");
  rma::Window& core = core_of(self);
  if (!given(slot[3]) && rank != rma::kProcNull) {
    uint64_t offset = offset_of(self, rank, slot[2], call);
    if (quick(data.bytes, [&] { return core.put_direct(rank, data.data, offset, data.bytes); })) return;
  }
  rma::Region region = region_of(self, rank, slot[2], slot[3], data, call);
  released([&] { core.put(rank, data.data, region, call); });
  keep(self, rank, &data, nullptr);
}

void get_body(WindowObject* self, PyObject** slot, int rank, const char* call) {
  check_target(self, slot[3], call);
  Result result = result_of(slot[0], layout_of(self, rank), !given(slot[3]), call);
  Operand& out = result.operand;
  rma::Window& core = core_of(self);
  if (!given(slot[3]) && rank != rma::kProcNull && !result.stand_in()) {
    uint64_t offset = offset_of(self, rank, slot[2], call);
    if (quick(out.bytes, [&] { return core.get_direct(rank, out.data, offset, out.bytes); })) return;
  }
  rma::Region region = region_of(self, rank, slot[2], slot[3], out, call);
  released([&] { core.get(rank, out.data, region, call); });
  keep(self, rank, nullptr, &result);
}

// accumulate: slots (origin, rank, disp, op, target); get_accumulate and fetch_and_op: (origin,
// result, rank, disp, op[, target]).
void accumulate_body(WindowObject* self, PyObject* origin, PyObject* result_slot, int rank, PyObject* disp,
                     PyObject* op_slot, PyObject* target, bool one_element, const char* call) {
  check_target(self, target, call);
  const TargetLayout& layout = layout_of(self, rank);
  rma::ReduceOp op = op_of(op_slot, call);
  std::optional<Result> result;
  if (result_slot != nullptr) result = result_of(result_slot, layout, !given(target), call);
  PyObject* expected = result ? result->operand.dtype : layout.dtype.ptr();
  std::array<std::byte, 16> scalar;
  Operand data = origin_of(self, origin, layout, expected, !result && !given(target), scalar, call, "origin");
  if (one_element) {
    single(result->operand, call, "result");
    single(data, call, "origin");
  }
  if (result && data.elements != result->operand.elements) {
    throw rma::UsageError(std::string("rma: win.") + call + ": origin has " + std::to_string(data.elements) +
                          " elements, result " + std::to_string(result->operand.elements));
  }
  check_op(op, data, call);
  rma::Window& core = core_of(self);
  char* into = result ? result->operand.data : nullptr;
  if (!given(target) && rank != rma::kProcNull && !(result && result->stand_in())) {
    uint64_t offset = offset_of(self, rank, disp, call);
    if (quick(data.bytes,
              [&] { return core.get_accumulate_direct(rank, op, data.type, data.data, into, offset, data.bytes); })) {
      return;
    }
  }
  rma::Region region = region_of(self, rank, disp, target, data, call);
  released([&] {
    if (into != nullptr) {
      core.get_accumulate(rank, op, data.type, data.data, into, region, call);
    } else {
      core.accumulate(rank, op, data.type, data.data, region, call);
    }
  });
  keep(self, rank, &data, result ? &*result : nullptr);
}

void compare_and_swap_body(WindowObject* self, PyObject** slot, int rank, const char* call) {
  const TargetLayout& layout = layout_of(self, rank);
  Result result = result_of(slot[2], layout, true, call);
  single(result.operand, call, "result");
  if (!rma::compare_fits(result.operand.type)) {
    throw rma::ArgumentTypeError(std::string("rma: win.") + call + ": compare_and_swap takes integers and bool, not " +
                                 py::str(result.operand.dtype).cast<std::string>());
  }
  std::array<std::byte, 16> scalars[2];
  Operand data = origin_of(self, slot[0], layout, result.operand.dtype, false, scalars[0], call, "origin");
  Operand compare = origin_of(self, slot[1], layout, result.operand.dtype, false, scalars[1], call, "compare");
  single(data, call, "origin");
  single(compare, call, "compare");
  rma::Window& core = core_of(self);
  uint64_t offset = offset_of(self, rank, slot[4], call);
  if (rank != rma::kProcNull && !result.stand_in() &&
      core.compare_and_swap_direct(rank, data.type, data.data, compare.data, result.operand.data, offset)) {
    return;
  }
  rma::Region region = rma::Region::contiguous(offset, data.bytes, static_cast<uint32_t>(data.itemsize));
  released([&] { core.compare_and_swap(rank, data.type, data.data, compare.data, result.operand.data, region, call); });
  keep(self, rank, &data, &result);
  if (rank != rma::kProcNull && compare.array) state_of(self).held.hold(rank, compare.array);
}

// ---- parameters of each method ----

constexpr Parameters kPut{"put", {"origin", "target_rank", "target_disp", "target"}, 4, 2, 3};
constexpr Parameters kGet{"get", {"result", "target_rank", "target_disp", "target"}, 4, 2, 3};
constexpr Parameters kAccumulate{"accumulate", {"origin", "target_rank", "target_disp", "op", "target"}, 5, 2, 4};
constexpr Parameters kGetAccumulate{
    "get_accumulate", {"origin", "result", "target_rank", "target_disp", "op", "target"}, 6, 3, 5};
constexpr Parameters kFetchAndOp{"fetch_and_op", {"origin", "result", "target_rank", "target_disp", "op"}, 5, 3, 5};
constexpr Parameters kCompareAndSwap{
    "compare_and_swap", {"origin", "compare", "result", "target_rank", "target_disp"}, 5, 4, 5};
constexpr Parameters kRput{"rput", {"origin", "target_rank", "target_disp", "target"}, 4, 2, 3};
constexpr Parameters kRget{"rget", {"result", "target_rank", "target_disp", "target"}, 4, 2, 3};
constexpr Parameters kRaccumulate{"raccumulate", {"origin", "target_rank", "target_disp", "op", "target"}, 5, 2, 4};
constexpr Parameters kRgetAccumulate{
    "rget_accumulate", {"origin", "result", "target_rank", "target_disp", "op", "target"}, 6, 3, 5};
constexpr Parameters kMode{"fence", {"mode"}, 1, 0, 1};
constexpr Parameters kLockAllMode{"lock_all", {"mode"}, 1, 0, 1};
constexpr Parameters kPost{"post", {"group", "mode"}, 2, 1, 2};
constexpr Parameters kStart{"start", {"group", "mode"}, 2, 1, 2};
constexpr Parameters kLock{"lock", {"rank", "lock_type", "mode"}, 3, 1, 3};
constexpr Parameters kTryLock{"_try_lock", {"rank", "lock_type"}, 2, 2, 2};
constexpr Parameters kUnlock{"unlock", {"rank"}, 1, 1, 1};
constexpr Parameters kFlush{"flush", {"rank"}, 1, 1, 1};
constexpr Parameters kFlushLocal{"flush_local", {"rank"}, 1, 1, 1};
#define RMA_NO_PARAMETERS(name) constexpr Parameters k_##name{#name, {}, 0, 0, 0};
RMA_NO_PARAMETERS(complete)
RMA_NO_PARAMETERS(wait)
RMA_NO_PARAMETERS(test)
RMA_NO_PARAMETERS(unlock_all)
RMA_NO_PARAMETERS(flush_all)
RMA_NO_PARAMETERS(flush_local_all)
RMA_NO_PARAMETERS(sync)
RMA_NO_PARAMETERS(free)
RMA_NO_PARAMETERS(_held_count)
#undef RMA_NO_PARAMETERS
constexpr Parameters kAttach{"attach", {"array"}, 1, 1, 1};
constexpr Parameters kDetach{"detach", {"array"}, 1, 1, 1};

// A method: match the arguments, check that the window is open, run the body.
template <const Parameters& P, PyObject* (*Body)(WindowObject*, PyObject**)>
PyObject* method(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  return guarded([&]() -> PyObject* {
    PyObject* slots[6];
    arguments::match(P, args, nargs, kwnames, slots);
    return Body(reinterpret_cast<WindowObject*>(self), slots);
  });
}

// The same for methods without parameters.
template <const Parameters& P, PyObject* (*Body)(WindowObject*)>
PyObject* method0(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  return guarded([&]() -> PyObject* {
    arguments::match(P, args, nargs, kwnames, nullptr);
    return Body(reinterpret_cast<WindowObject*>(self));
  });
}

PyObject* none() { Py_RETURN_NONE; }

PyObject* put(WindowObject* self, PyObject** slot) {
  check_open(self, "put");
  put_body(self, slot, rank_of(self, slot[1], "put", "target_rank", true), "put");
  return none();
}

PyObject* get(WindowObject* self, PyObject** slot) {
  check_open(self, "get");
  get_body(self, slot, rank_of(self, slot[1], "get", "target_rank", true), "get");
  return none();
}

PyObject* accumulate(WindowObject* self, PyObject** slot) {
  check_open(self, "accumulate");
  int rank = rank_of(self, slot[1], "accumulate", "target_rank", true);
  accumulate_body(self, slot[0], nullptr, rank, slot[2], slot[3], slot[4], false, "accumulate");
  return none();
}

PyObject* get_accumulate(WindowObject* self, PyObject** slot) {
  check_open(self, "get_accumulate");
  int rank = rank_of(self, slot[2], "get_accumulate", "target_rank", true);
  accumulate_body(self, slot[0], slot[1], rank, slot[3], slot[4], slot[5], false, "get_accumulate");
  return none();
}

PyObject* fetch_and_op(WindowObject* self, PyObject** slot) {
  check_open(self, "fetch_and_op");
  int rank = rank_of(self, slot[2], "fetch_and_op", "target_rank", true);
  accumulate_body(self, slot[0], slot[1], rank, slot[3], slot[4], nullptr, true, "fetch_and_op");
  return none();
}

PyObject* compare_and_swap(WindowObject* self, PyObject** slot) {
  check_open(self, "compare_and_swap");
  compare_and_swap_body(self, slot, rank_of(self, slot[3], "compare_and_swap", "target_rank", true),
                        "compare_and_swap");
  return none();
}

// Request-based calls: the same calls, inside a passive-target epoch, returning an rma.Request.
int passive_rank(WindowObject* self, PyObject* value, const char* call) {
  check_open(self, call);
  int rank = rank_of(self, value, call, "target_rank", true);
  if (!core_of(self).in_passive_epoch(rank)) {
    throw rma::EpochError("rma: " + core_of(self).where(call, rank) +
                          ": request-based calls need a passive-target epoch "
                          "(win.lock(" +
                          std::to_string(rank) + ") or win.lock_all())");
  }
  return rank;
}

PyObject* rput(WindowObject* self, PyObject** slot) {
  int rank = passive_rank(self, slot[1], "rput");
  put_body(self, slot, rank, "rput");
  return new_request(reinterpret_cast<PyObject*>(self), rank, Py_None);
}

PyObject* rget(WindowObject* self, PyObject** slot) {
  int rank = passive_rank(self, slot[1], "rget");
  get_body(self, slot, rank, "rget");
  return new_request(reinterpret_cast<PyObject*>(self), rank, slot[0]);
}

PyObject* raccumulate(WindowObject* self, PyObject** slot) {
  int rank = passive_rank(self, slot[1], "raccumulate");
  accumulate_body(self, slot[0], nullptr, rank, slot[2], slot[3], slot[4], false, "raccumulate");
  return new_request(reinterpret_cast<PyObject*>(self), rank, Py_None);
}

PyObject* rget_accumulate(WindowObject* self, PyObject** slot) {
  int rank = passive_rank(self, slot[2], "rget_accumulate");
  accumulate_body(self, slot[0], slot[1], rank, slot[3], slot[4], slot[5], false, "rget_accumulate");
  return new_request(reinterpret_cast<PyObject*>(self), rank, slot[1]);
}

// ---- synchronization ----

std::vector<int> group_of(PyObject* value, const char* call) {
  std::vector<int> ranks;
  py::object items;
  if (PyList_CheckExact(value) || PyTuple_CheckExact(value)) {
    items = py::reinterpret_borrow<py::object>(value);
  } else {
    PyObject* members = PyObject_GetAttrString(value, "ranks");  // an rma.Group
    if (members == nullptr) {
      PyErr_Clear();
      members = PySequence_List(value);  // any iterable of ranks
      if (members == nullptr) {
        PyErr_Clear();
        throw rma::ArgumentTypeError(std::string("rma: win.") + call +
                                     ": group must be an rma.Group or an iterable of ranks, not " +
                                     Py_TYPE(value)->tp_name);
      }
    }
    items = py::reinterpret_steal<py::object>(members);
  }
  py::object sequence = py::reinterpret_steal<py::object>(PySequence_Fast(items.ptr(), "group"));
  if (!sequence) throw py::error_already_set();
  Py_ssize_t count = PySequence_Fast_GET_SIZE(sequence.ptr());
  PyObject** item = PySequence_Fast_ITEMS(sequence.ptr());
  ranks.reserve(static_cast<size_t>(count));
  for (Py_ssize_t i = 0; i < count; ++i) {
    int64_t rank = arguments::integer(item[i], call, "a rank of the group");
    if (rank < std::numeric_limits<int>::min() || rank > std::numeric_limits<int>::max())
      rank = -1;  // the core refuses it
    ranks.push_back(static_cast<int>(rank));
  }
  return ranks;
}

PyObject* fence(WindowObject* self, PyObject** slot) {
  check_open(self, "fence");
  if (!window_calls::fence(self, mode_of(slot[0], "fence"))) return nullptr;
  return new_epoch(reinterpret_cast<PyObject*>(self), EpochKind::Fence, 0);
}

PyObject* post(WindowObject* self, PyObject** slot) {
  check_open(self, "post");
  std::vector<int> group = group_of(slot[0], "post");
  long mode = mode_of(slot[1], "post");
  released([&] { core_of(self).post(group, static_cast<int>(mode)); });
  return new_epoch(reinterpret_cast<PyObject*>(self), EpochKind::Post, 0);
}

PyObject* start(WindowObject* self, PyObject** slot) {
  check_open(self, "start");
  std::vector<int> group = group_of(slot[0], "start");
  long mode = mode_of(slot[1], "start");
  released([&] { core_of(self).start(group, static_cast<int>(mode)); });
  return new_epoch(reinterpret_cast<PyObject*>(self), EpochKind::Start, 0);
}

PyObject* complete(WindowObject* self) { return window_calls::complete(self) ? none() : nullptr; }
PyObject* wait(WindowObject* self) { return window_calls::wait(self) ? none() : nullptr; }

PyObject* test(WindowObject* self) {
  check_open(self, "test");
  bool done = false;
  released([&] { done = core_of(self).test(); });
  return PyBool_FromLong(done);
}

int lock_type_of(PyObject* value, const char* call) {
  int type = rma::kLockExclusive;
  if (value != nullptr && !constants::lock_type_of(value, type)) {
    throw rma::ArgumentTypeError(std::string("rma: win.") + call +
                                 ": lock_type must be rma.LOCK_EXCLUSIVE or rma.LOCK_SHARED, not " +
                                 Py_TYPE(value)->tp_name);
  }
  return type;
}

void check_locks(WindowObject* self, const char* call) {
  if (state_of(self).no_locks) {
    throw rma::EpochError("rma: " + core_of(self).where(call, -1) +
                          ": this window was created with info={'no_locks': True}");
  }
}

PyObject* lock(WindowObject* self, PyObject** slot) {
  check_open(self, "lock");
  int rank = rank_of(self, slot[0], "lock", "rank", false);
  int type = lock_type_of(slot[1], "lock");
  long mode = mode_of(slot[2], "lock");
  check_locks(self, "lock");
  released([&] { core_of(self).lock(rank, type, static_cast<int>(mode)); });
  return new_epoch(reinterpret_cast<PyObject*>(self), EpochKind::Lock, rank);
}

PyObject* try_lock(WindowObject* self, PyObject** slot) {
  check_open(self, "lock");
  int rank = rank_of(self, slot[0], "lock", "rank", false);
  int type = lock_type_of(slot[1], "lock");
  check_locks(self, "lock");
  bool granted = false;
  released([&] { granted = core_of(self).try_lock(rank, type); });
  return PyBool_FromLong(granted);
}

PyObject* unlock(WindowObject* self, PyObject** slot) {
  check_open(self, "unlock");
  int rank = rank_of(self, slot[0], "unlock", "rank", false);
  return window_calls::unlock(self, rank) ? none() : nullptr;
}

PyObject* lock_all(WindowObject* self, PyObject** slot) {
  check_open(self, "lock_all");
  long mode = mode_of(slot[0], "lock_all");
  check_locks(self, "lock_all");
  released([&] { core_of(self).lock_all(static_cast<int>(mode)); });
  return new_epoch(reinterpret_cast<PyObject*>(self), EpochKind::LockAll, 0);
}

PyObject* unlock_all(WindowObject* self) { return window_calls::unlock_all(self) ? none() : nullptr; }

PyObject* flush_rank(WindowObject* self, PyObject* value, const char* call) {
  check_open(self, call);
  int rank = rank_of(self, value, call, "rank", true);
  rma::Window& core = core_of(self);
  WindowState& state = state_of(self);
  if (rank == rma::kProcNull || (!state.held.any(rank) && core.flush_direct(rank))) {
    if (rank == rma::kProcNull) released([&] { core.flush(rank); });  // still checks the epoch
    return none();
  }
  released([&] { core.flush(rank); });
  state.held.finish(rank);
  return none();
}

PyObject* flush(WindowObject* self, PyObject** slot) { return flush_rank(self, slot[0], "flush"); }
PyObject* flush_local(WindowObject* self, PyObject** slot) { return flush_rank(self, slot[0], "flush_local"); }

PyObject* flush_every(WindowObject* self, const char* call) {
  check_open(self, call);
  released([&] { core_of(self).flush_all(); });
  state_of(self).held.finish_all();
  return none();
}

PyObject* flush_all(WindowObject* self) { return flush_every(self, "flush_all"); }
PyObject* flush_local_all(WindowObject* self) { return flush_every(self, "flush_local_all"); }

PyObject* sync(WindowObject* self) {
  check_open(self, "sync");
  return none();
}

PyObject* free_window(WindowObject* self) {
  check_open(self, "free");
  released([&] { core_of(self).free(); });
  state_of(self).held.drop_all();
  state_of(self).attached.clear();
  return none();
}

// ---- dynamic windows ----

PyObject* attach(WindowObject* self, PyObject** slot) {
  check_open(self, "attach");
  PyObject* array = slot[0];
  if (!arguments::is_array(array)) {
    throw rma::ArgumentTypeError(std::string("rma: win.attach: expected a NumPy array, not ") +
                                 Py_TYPE(array)->tp_name);
  }
  auto* header = py::detail::array_proxy(array);
  int needed = py::detail::npy_api::NPY_ARRAY_C_CONTIGUOUS_ | py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
  if ((header->flags & needed) != needed) {
    throw rma::UsageError("rma: win.attach: the array must be writable and C-contiguous");
  }
  arguments::check_plain(header->descr, "attach", "array");
  auto described = py::reinterpret_borrow<py::array>(array);
  if (!state_of(self).dynamic) {
    throw rma::RmaError("rma: " + core_of(self).where("attach", -1) + ": only a dynamic window takes attach");
  }
  core_of(self).attach(header->data, static_cast<uint64_t>(described.nbytes()));
  auto address = reinterpret_cast<uintptr_t>(header->data);
  state_of(self).attached[address] = described;
  return PyLong_FromUnsignedLongLong(address);
}

PyObject* detach(WindowObject* self, PyObject** slot) {
  check_open(self, "detach");
  WindowState& state = state_of(self);
  auto found = arguments::is_array(slot[0])
                   ? state.attached.find(reinterpret_cast<uintptr_t>(py::detail::array_proxy(slot[0])->data))
                   : state.attached.end();
  if (found == state.attached.end())
    throw rma::UsageError("rma: win.detach: that array is not attached to this window");
  core_of(self).detach(reinterpret_cast<void*>(found->first));
  state.attached.erase(found);
  return none();
}

PyObject* held_count(WindowObject* self) { return PyLong_FromSize_t(state_of(self).held.count()); }

#define RMA_METHOD(name, parameters, body, doc) {name, &method<parameters, body>, doc}
#define RMA_METHOD0(name, body, doc) {#name, &method0<k_##name, body>, doc}

const MethodSpec window_methods[] = {
    RMA_METHOD("put", kPut, put, window_docs::put),
    RMA_METHOD("get", kGet, get, window_docs::get),
    RMA_METHOD("accumulate", kAccumulate, accumulate, window_docs::accumulate),
    RMA_METHOD("get_accumulate", kGetAccumulate, get_accumulate, window_docs::get_accumulate),
    RMA_METHOD("fetch_and_op", kFetchAndOp, fetch_and_op, window_docs::fetch_and_op),
    RMA_METHOD("compare_and_swap", kCompareAndSwap, compare_and_swap, window_docs::compare_and_swap),
    RMA_METHOD("rput", kRput, rput, window_docs::rput),
    RMA_METHOD("rget", kRget, rget, window_docs::rget),
    RMA_METHOD("raccumulate", kRaccumulate, raccumulate, window_docs::raccumulate),
    RMA_METHOD("rget_accumulate", kRgetAccumulate, rget_accumulate, window_docs::rget_accumulate),
    RMA_METHOD("fence", kMode, fence, window_docs::fence),
    RMA_METHOD("post", kPost, post, window_docs::post),
    RMA_METHOD("start", kStart, start, window_docs::start),
    RMA_METHOD0(complete, complete, window_docs::complete),
    RMA_METHOD0(wait, wait, window_docs::wait),
    RMA_METHOD0(test, test, window_docs::test),
    RMA_METHOD("lock", kLock, lock, window_docs::lock),
    RMA_METHOD("unlock", kUnlock, unlock, window_docs::unlock),
    RMA_METHOD("lock_all", kLockAllMode, lock_all, window_docs::lock_all),
    RMA_METHOD0(unlock_all, unlock_all, window_docs::unlock_all),
    RMA_METHOD("flush", kFlush, flush, window_docs::flush),
    RMA_METHOD0(flush_all, flush_all, window_docs::flush_all),
    RMA_METHOD("flush_local", kFlushLocal, flush_local, window_docs::flush_local),
    RMA_METHOD0(flush_local_all, flush_local_all, window_docs::flush_local_all),
    RMA_METHOD0(sync, sync, window_docs::sync),
    RMA_METHOD0(free, free_window, window_docs::free),
    RMA_METHOD("attach", kAttach, attach, window_docs::attach),
    RMA_METHOD("detach", kDetach, detach, window_docs::detach),
    RMA_METHOD(
        "_try_lock", kTryLock, try_lock,
        "_try_lock($self, /, rank, lock_type)\n--\n\nLock rank only if that can be done at once; say whether it was (rma.sync.Mutex)."),
    RMA_METHOD0(_held_count, held_count,
                "_held_count($self, /)\n--\n\nReturn how many buffers the window keeps for calls not yet complete."),
};

#undef RMA_METHOD
#undef RMA_METHOD0

// _core.Window.__new__(cls, core, targets, owner, no_locks, dynamic): rma.Window's
// constructors call it once the collective creation is done. targets: per rank, (dtype,
// disp_unit in bytes, raw).
PyObject* window_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  PyObject *core, *targets, *owner;
  int no_locks = 0, dynamic = 0;
  static const char* names[] = {"core", "targets", "owner", "no_locks", "dynamic", nullptr};
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOO|pp:Window", const_cast<char**>(names), &core, &targets, &owner,
                                   &no_locks, &dynamic)) {
    PyErr_Clear();
    PyErr_SetString(PyExc_TypeError,
                    "use rma.Window.allocate(...), rma.Window.create(...) or rma.Window.create_dynamic(...)");
    return nullptr;
  }
  auto made = guarded([&]() -> PyObject* {
    auto state = std::make_unique<WindowState>(WindowState{py::cast<std::shared_ptr<rma::Window>>(py::handle(core)),
                                                           {},
                                                           py::reinterpret_borrow<py::object>(owner),
                                                           KeepAlive(0),
                                                           {},
                                                           no_locks != 0,
                                                           dynamic != 0});
    for (py::handle entry : py::reinterpret_borrow<py::list>(targets)) {
      auto item = entry.cast<py::tuple>();
      py::object dtype = item[0];
      rma::ElementType element = constants::element_type_of(dtype.ptr());
      uint64_t itemsize = py::reinterpret_borrow<py::dtype>(dtype).itemsize();
      state->targets.push_back({dtype, element, itemsize, item[1].cast<uint64_t>(), item[2].cast<bool>()});
    }
    state->held = KeepAlive(static_cast<int>(state->targets.size()));
    PyObject* self = type->tp_alloc(type, 0);
    if (self == nullptr) return nullptr;
    reinterpret_cast<WindowObject*>(self)->state = state.release();
    return self;
  });
  return made;
}

void window_dealloc(PyObject* self) {
  delete reinterpret_cast<WindowObject*>(self)->state;
  Py_TYPE(self)->tp_free(self);
}

PyTypeObject* window_type() {
  static PyTypeObject type = [] {
    PyTypeObject t{PyVarObject_HEAD_INIT(nullptr, 0)};
    t.tp_name = "rma._core.Window";
    t.tp_doc = "The compiled part of rma.Window: its communication and synchronization calls.";
    t.tp_basicsize = sizeof(WindowObject);
    t.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE;
    t.tp_new = window_new;
    t.tp_dealloc = window_dealloc;
    return t;
  }();
  return &type;
}

}  // namespace

namespace window_calls {

bool fence(WindowObject* self, long mode) {
  return guarded([&]() -> PyObject* {
           check_open(self, "fence");
           released([&] { core_of(self).fence(static_cast<int>(mode)); });
           state_of(self).held.finish_all();
           return Py_None;
         }) != nullptr;
}

bool complete(WindowObject* self) {
  return guarded([&]() -> PyObject* {
           check_open(self, "complete");
           released([&] { core_of(self).complete(); });
           state_of(self).held.finish_all();
           return Py_None;
         }) != nullptr;
}

bool wait(WindowObject* self) {
  return guarded([&]() -> PyObject* {
           check_open(self, "wait");
           released([&] { core_of(self).wait(); });
           return Py_None;
         }) != nullptr;
}

bool unlock(WindowObject* self, int rank) {
  return guarded([&]() -> PyObject* {
           check_open(self, "unlock");
           released([&] { core_of(self).unlock(rank); });
           state_of(self).held.finish(rank);
           return Py_None;
         }) != nullptr;
}

bool unlock_all(WindowObject* self) {
  return guarded([&]() -> PyObject* {
           check_open(self, "unlock_all");
           released([&] { core_of(self).unlock_all(); });
           state_of(self).held.finish_all();
           return Py_None;
         }) != nullptr;
}

bool request_test(WindowObject* self, int rank, bool& done) {
  return guarded([&]() -> PyObject* {
           bool idle = false;
           released([&] { idle = core_of(self).target_idle(rank); });
           if (idle) state_of(self).held.finish(rank);
           done = idle;
           return Py_None;
         }) != nullptr;
}

bool request_wait(WindowObject* self, int rank) {
  return guarded([&]() -> PyObject* {
           rma::Window& core = core_of(self);
           released([&] {
             if (!core.target_idle(rank) && core.in_passive_epoch(rank)) core.flush(rank);
           });
           state_of(self).held.finish(rank);
           return Py_None;
         }) != nullptr;
}

}  // namespace window_calls

void register_window_type(py::module_& m) {
  region_hook = PyUnicode_InternFromString("_region");
  origin_hook = PyUnicode_InternFromString("_origin_of");
  if (PyType_Ready(window_type()) < 0) throw py::error_already_set();
  Py_INCREF(window_type());
  for (const MethodSpec& spec : window_methods) add_method(window_type(), spec);
  m.attr("Window") = py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(window_type()));
  register_epoch_types(m);
}
