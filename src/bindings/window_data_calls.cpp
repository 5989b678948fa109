// The communication calls of rma._core.Window (put, get, the accumulate family, and their
// request-based forms): parse the arguments once, let the core's rules check them, try the
// core's direct path with the GIL held, else run the general call with the GIL released and
// keep the buffers it uses until the window's synchronization finishes them. Only what needs
// NumPy's Python API goes back to Python, through two hooks of the subclass rma.Window:
// `_region` (a target= index into a region) and `_origin_of` (a list, a NumPy scalar, or
// another non-array origin into an array).
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <map>
#include <optional>

#include "constants.hpp"
#include "window_docs.hpp"
#include "window_methods.hpp"

namespace window_methods {

namespace {

using arguments::Operand;
using arguments::TargetLayout;

PyObject* interned(const char* text) { return PyUnicode_InternFromString(text); }

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

// `operand`'s elements from the byte offset on.
rma::Region contiguous_region(uint64_t offset, const Operand& operand) {
  return rma::Region::contiguous(offset, operand.bytes, static_cast<uint32_t>(std::max<uint64_t>(operand.itemsize, 1)));
}

// The target region of a call: `operand`'s elements from the displacement on, or the region a
// target= index selects (the subclass's _region hook: NumPy's indexing rules).
rma::Region region_of(WindowObject* self, int rank, PyObject* disp, PyObject* target, const Operand& operand,
                      const char* call) {
  if (!given(target)) return contiguous_region(offset_of(self, rank, disp, call), operand);
  if (disp != nullptr && arguments::integer(disp, call, "target_disp") != 0) {
    throw rma::UsageError(std::string("rma: win.") + call + ": give either target_disp or target=, not both");
  }
  py::object name = py::str(call);
  static PyObject* region_hook = interned("_region");
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
  static PyObject* origin_hook = interned("_origin_of");
  py::object array = py::reinterpret_steal<py::object>(
      PyObject_CallMethodObjArgs(reinterpret_cast<PyObject*>(self), origin_hook, value, expected, name.ptr(), nullptr));
  if (!array) throw py::error_already_set();
  return arguments::from_array(array.ptr(), layout, expected, raw_ok, false, call, role);
}

struct Result {
  Operand operand;
  PyObject* given;  // the caller's array (borrowed: it is an argument of the call)
  // RMA_CHECK: the private buffer (a bytearray) the call fills instead, held as long as the
  // call may write into it; null when not staged.
  py::object staged = {};
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
    if (result->staged) held.hold(rank, result->staged);
    if (result->stand_in())
      held.copy_back(rank, py::reinterpret_borrow<py::object>(result->given), result->operand.array);
  }
}

// ---- RMA_CHECK (check_state.hpp): the access of a call that returned ----

using rma::check::AccessKind;

CheckState* checking(WindowObject* self, int rank) {
  return rank == rma::kProcNull ? nullptr : state_of(self).check.get();
}

// A result the checker watches is filled through a private buffer.
void stage(WindowObject* self, int rank, Result& result) {
  if (CheckState* check = checking(self, rank)) {
    result.staged = check->stage(result.operand, result.given);
    if (result.staged) result.operand.data = PyByteArray_AS_STRING(result.staged.ptr());
  }
}

// An accumulate's element type as messages name it (NumPy's name of its dtype).
const std::string& dtype_name(PyObject* dtype) {
  static auto* names = new std::map<PyObject*, std::string>();  // (each dtype kept: its address stays its own)
  auto found = names->find(dtype);
  if (found != names->end()) return found->second;
  Py_INCREF(dtype);
  return names->emplace(dtype, py::str(dtype).cast<std::string>()).first->second;
}

// The name of a data call in RMA_CHECK's records ("win.put"), interned.
const std::string& call_name(const char* call) {
  static auto* names = new std::map<const char*, const std::string*>();  // (calls are static names)
  auto found = names->find(call);
  if (found == names->end()) found = names->emplace(call, &rma::check::interned(std::string("win.") + call)).first;
  return *found->second;
}

// What a call touched at its target: its region, or (a direct call's) one run of bytes.
struct Touched {
  const rma::Region* region = nullptr;
  rma::check::Span run{};
};

// Records the call; returns its serial (0 when the window is not checked).
uint64_t checked(WindowObject* self, int rank, const char* call, AccessKind kind, std::string_view op, PyObject* dtype,
                 const Touched& touched, PyObject* origin, const Result* result) {
  CheckState* check = checking(self, rank);
  if (check == nullptr) return 0;
  std::string_view element = dtype != nullptr ? std::string_view(dtype_name(dtype)) : std::string_view();
  uint32_t element_bytes =
      dtype != nullptr ? static_cast<uint32_t>(py::reinterpret_borrow<py::dtype>(dtype).itemsize()) : 0;
  std::span<const rma::check::Span> spans = touched.region != nullptr ? check->steps().spans_of(*touched.region)
                                            : touched.run.start < touched.run.stop
                                                ? std::span<const rma::check::Span>(&touched.run, 1)
                                                : std::span<const rma::check::Span>();
  return check->record(rank, call_name(call), kind, op, element, element_bytes, spans,
                       origin != nullptr && arguments::is_array(origin) ? origin : nullptr,
                       result != nullptr ? result->given : nullptr, result != nullptr ? result->staged.ptr() : nullptr,
                       result != nullptr && result->stand_in());
}

// A direct call's run: `operand`'s bytes from offset on.
Touched direct_run(uint64_t offset, const Operand& operand) { return {nullptr, {offset, offset + operand.bytes}}; }

AccessKind accumulate_kind(rma::ReduceOp op, bool fetches) {
  return fetches && op == rma::ReduceOp::NoOp ? AccessKind::AtomicRead : AccessKind::Update;
}

// ---- the communication calls (slots: the parameters in signature order) ----

// Each body returns the call's RMA_CHECK serial (0 when not checked).
uint64_t put_body(WindowObject* self, PyObject** slot, int rank, const char* call) {
  check_target(self, slot[3], call);
  const TargetLayout& layout = layout_of(self, rank);
  std::array<std::byte, 16> scalar;
  Operand data = origin_of(self, slot[0], layout, layout.dtype.ptr(), !given(slot[3]), scalar, call, "origin");
  rma::Window& core = core_of(self);
  TracedCall::note(core.job_rank(rank), data.bytes);
  auto record = [&](const Touched& touched) {
    return checked(self, rank, call, AccessKind::Write, "", nullptr, touched, slot[0], nullptr);
  };
  if (!given(slot[3]) && rank != rma::kProcNull) {
    uint64_t offset = offset_of(self, rank, slot[2], call);
    if (quick(data.bytes, [&] { return core.put_direct(rank, data.data, offset, data.bytes); })) {
      return record(direct_run(offset, data));
    }
  }
  rma::Region region = region_of(self, rank, slot[2], slot[3], data, call);
  released([&] { core.put(rank, data.data, region, call); });
  keep(self, rank, &data, nullptr);
  return record({&region});
}

uint64_t get_body(WindowObject* self, PyObject** slot, int rank, const char* call) {
  check_target(self, slot[3], call);
  Result result = result_of(slot[0], layout_of(self, rank), !given(slot[3]), call);
  stage(self, rank, result);
  Operand& out = result.operand;
  rma::Window& core = core_of(self);
  TracedCall::note(core.job_rank(rank), out.bytes);
  auto record = [&](const Touched& touched) {
    return checked(self, rank, call, AccessKind::Read, "", nullptr, touched, nullptr, &result);
  };
  if (!given(slot[3]) && rank != rma::kProcNull && !result.stand_in()) {
    uint64_t offset = offset_of(self, rank, slot[2], call);
    if (quick(out.bytes, [&] { return core.get_direct(rank, out.data, offset, out.bytes); })) {
      return record(direct_run(offset, out));
    }
  }
  rma::Region region = region_of(self, rank, slot[2], slot[3], out, call);
  released([&] { core.get(rank, out.data, region, call); });
  keep(self, rank, nullptr, &result);
  return record({&region});
}

// accumulate: slots (origin, rank, disp, op, target); get_accumulate and fetch_and_op: (origin,
// result, rank, disp, op[, target]).
uint64_t accumulate_body(WindowObject* self, PyObject* origin, PyObject* result_slot, int rank, PyObject* disp,
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
  if (result) stage(self, rank, *result);
  rma::Window& core = core_of(self);
  TracedCall::note(core.job_rank(rank), data.bytes);
  char* into = result ? result->operand.data : nullptr;
  auto record = [&](const Touched& touched) {
    return checked(self, rank, call, accumulate_kind(op, result.has_value()),
                   rma::kReduceOpNames[static_cast<size_t>(op)], data.dtype, touched, origin,
                   result ? &*result : nullptr);
  };
  if (!given(target) && rank != rma::kProcNull && !(result && result->stand_in())) {
    uint64_t offset = offset_of(self, rank, disp, call);
    if (quick(data.bytes,
              [&] { return core.get_accumulate_direct(rank, op, data.type, data.data, into, offset, data.bytes); })) {
      return record(direct_run(offset, data));
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
  return record({&region});
}

uint64_t compare_and_swap_body(WindowObject* self, PyObject** slot, int rank, const char* call) {
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
  stage(self, rank, result);
  rma::Window& core = core_of(self);
  TracedCall::note(core.job_rank(rank), data.bytes);
  uint64_t offset = offset_of(self, rank, slot[4], call);
  auto record = [&](const Touched& touched) {
    return checked(self, rank, call, AccessKind::Update, "CAS", data.dtype, touched, slot[0], &result);
  };
  if (rank != rma::kProcNull && !result.stand_in() &&
      core.compare_and_swap_direct(rank, data.type, data.data, compare.data, result.operand.data, offset)) {
    return record(direct_run(offset, data));
  }
  rma::Region region = contiguous_region(offset, data);
  released([&] { core.compare_and_swap(rank, data.type, data.data, compare.data, result.operand.data, region, call); });
  keep(self, rank, &data, &result);
  if (rank != rma::kProcNull && compare.array) state_of(self).held.hold(rank, compare.array);
  return record({&region});
}

// The parameters of each call (parameters.hpp: its signature too). The defaults say what an
// argument left out means: target_disp 0, op rma.Op.SUM, no target= index.
constexpr arguments::Parameter kOrigin{"origin"}, kResult{"result"}, kRank{"target_rank"}, kDisp{"target_disp", "0"},
    kOp{"op", "rma.Op.SUM"}, kTarget{"target", "None"};
constexpr Parameters kPut{"put", {kOrigin, kRank, kDisp, kTarget}, 3};
constexpr Parameters kGet{"get", {kResult, kRank, kDisp, kTarget}, 3};
constexpr Parameters kAccumulate{"accumulate", {kOrigin, kRank, kDisp, kOp, kTarget}, 4};
constexpr Parameters kGetAccumulate{"get_accumulate", {kOrigin, kResult, kRank, kDisp, kOp, kTarget}, 5};
constexpr Parameters kFetchAndOp{"fetch_and_op", {kOrigin, kResult, kRank, kDisp, kOp}, 5};
constexpr Parameters kCompareAndSwap{"compare_and_swap", {kOrigin, {"compare"}, kResult, kRank, kDisp}, 5};
constexpr Parameters kRput{"rput", {kOrigin, kRank, kDisp, kTarget}, 3};
constexpr Parameters kRget{"rget", {kResult, kRank, kDisp, kTarget}, 3};
constexpr Parameters kRaccumulate{"raccumulate", {kOrigin, kRank, kDisp, kOp, kTarget}, 4};
constexpr Parameters kRgetAccumulate{"rget_accumulate", {kOrigin, kResult, kRank, kDisp, kOp, kTarget}, 5};

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
  uint64_t serial = put_body(self, slot, rank, "rput");
  return new_request(reinterpret_cast<PyObject*>(self), rank, Py_None, serial);
}

PyObject* rget(WindowObject* self, PyObject** slot) {
  int rank = passive_rank(self, slot[1], "rget");
  uint64_t serial = get_body(self, slot, rank, "rget");
  return new_request(reinterpret_cast<PyObject*>(self), rank, slot[0], serial);
}

PyObject* raccumulate(WindowObject* self, PyObject** slot) {
  int rank = passive_rank(self, slot[1], "raccumulate");
  uint64_t serial = accumulate_body(self, slot[0], nullptr, rank, slot[2], slot[3], slot[4], false, "raccumulate");
  return new_request(reinterpret_cast<PyObject*>(self), rank, Py_None, serial);
}

PyObject* rget_accumulate(WindowObject* self, PyObject** slot) {
  int rank = passive_rank(self, slot[2], "rget_accumulate");
  uint64_t serial = accumulate_body(self, slot[0], slot[1], rank, slot[3], slot[4], slot[5], false, "rget_accumulate");
  return new_request(reinterpret_cast<PyObject*>(self), rank, slot[1], serial);
}

#define RMA_METHOD(parameters, body, doc) {parameters, &method<parameters, body>, doc}

const MethodSpec methods[] = {
    RMA_METHOD(kPut, put, window_docs::put),
    RMA_METHOD(kGet, get, window_docs::get),
    RMA_METHOD(kAccumulate, accumulate, window_docs::accumulate),
    RMA_METHOD(kGetAccumulate, get_accumulate, window_docs::get_accumulate),
    RMA_METHOD(kFetchAndOp, fetch_and_op, window_docs::fetch_and_op),
    RMA_METHOD(kCompareAndSwap, compare_and_swap, window_docs::compare_and_swap),
    RMA_METHOD(kRput, rput, window_docs::rput),
    RMA_METHOD(kRget, rget, window_docs::rget),
    RMA_METHOD(kRaccumulate, raccumulate, window_docs::raccumulate),
    RMA_METHOD(kRgetAccumulate, rget_accumulate, window_docs::rget_accumulate),
};

#undef RMA_METHOD

}  // namespace

std::span<const MethodSpec> data_call_methods() { return methods; }

}  // namespace window_methods
