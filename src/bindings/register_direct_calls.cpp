// The fast path from Python to shared windows: _core.DirectCalls.
//
// rma.Window's calls try it first. It reads the NumPy arrays' headers itself and hands the
// core one contiguous run, so that a small put or fetch_and_op costs about what a method call
// costs. It takes only calls whose arguments need no conversion (arrays of the target's dtype,
// C-contiguous, an int rank and displacement); for anything else it returns False having done
// nothing, and rma.Window's general path takes the call, with its conversions and its errors.
// Direct calls complete before they return, so no buffer needs keeping alive.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstring>
#include <memory>
#include <vector>

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

class DirectCalls {
 public:
  // layout: per rank (dtype, disp_unit, raw). element_dtypes: the canonical dtype object of
  // each ElementType, in its order (window/reduce.hpp).
  DirectCalls(std::shared_ptr<rma::Window> window, const py::list& layout, const py::list& element_dtypes)
      : window_(std::move(window)) {
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

  bool put(py::handle origin, py::handle rank, py::handle disp) {
    const TargetLayout* target;
    uint64_t offset;
    Operand data;
    if (!locate(rank, disp, target, offset) || !operand(origin, *target, true, false, data)) return false;
    return run(data.bytes, [&] { return window_->put_direct(rank_, data.data, offset, data.bytes); });
  }

  bool get(py::handle result, py::handle rank, py::handle disp) {
    const TargetLayout* target;
    uint64_t offset;
    Operand out;
    if (!locate(rank, disp, target, offset) || !operand(result, *target, true, true, out)) return false;
    return run(out.bytes, [&] { return window_->get_direct(rank_, out.data, offset, out.bytes); });
  }

  // accumulate (result None) and get_accumulate.
  bool get_accumulate(py::handle origin, py::handle result, py::handle rank, py::handle disp, py::handle op) {
    return reduce(origin, result, rank, disp, op, false);
  }

  // get_accumulate of exactly one element.
  bool fetch_and_op(py::handle origin, py::handle result, py::handle rank, py::handle disp, py::handle op) {
    return reduce(origin, result, rank, disp, op, true);
  }

  bool compare_and_swap(py::handle origin, py::handle compare, py::handle result, py::handle rank, py::handle disp) {
    const TargetLayout* target;
    uint64_t offset;
    Operand data, comparand, out;
    if (!locate(rank, disp, target, offset) || !operand(origin, *target, true, false, data) ||
        !operand(compare, *target, true, false, comparand) || !operand(result, *target, true, true, out)) {
      return false;
    }
    if (data.elements != 1 || comparand.dtype != data.dtype || out.dtype != data.dtype ||
        comparand.elements != 1 || out.elements != 1) {
      return false;
    }
    return window_->compare_and_swap_direct(rank_, data.type, data.data, comparand.data, out.data, offset);
  }

  bool flush(py::handle rank) {
    long value;
    return small_int(rank, value) && window_->flush_direct(static_cast<int>(value));
  }

 private:
  // Large copies let other Python threads run meanwhile.
  static constexpr uint64_t kReleaseGilBytes = 256 * 1024;

  template <typename Call>
  static bool run(uint64_t bytes, Call call) {
    if (bytes < kReleaseGilBytes) return call();
    py::gil_scoped_release release;
    return call();
  }

  bool reduce(py::handle origin, py::handle result, py::handle rank, py::handle disp, py::handle op, bool single) {
    const TargetLayout* target;
    uint64_t offset;
    Operand data, out{};
    long code;
    if (!small_int_like(op, code) || code < 0 || code > static_cast<long>(rma::ReduceOp::NoOp)) return false;
    if (!locate(rank, disp, target, offset) || !operand(origin, *target, true, false, data)) return false;
    if (!result.is_none() && (!operand(result, *target, true, true, out) || out.dtype != data.dtype ||
                              out.elements != data.elements)) {
      return false;
    }
    if (data.type == ElementType::Bytes || (single && data.elements != 1)) return false;
    return run(data.bytes, [&] {
      return window_->get_accumulate_direct(rank_, static_cast<rma::ReduceOp>(code), data.type, data.data,
                                            result.is_none() ? nullptr : out.data, offset, data.bytes);
    });
  }

  // An int, or an int subclass such as rma.Op, that fits a long.
  static bool small_int_like(py::handle value, long& out) {
    if (!PyLong_Check(value.ptr()) || PyBool_Check(value.ptr())) return false;
    int overflow = 0;
    out = PyLong_AsLongAndOverflow(value.ptr(), &overflow);
    if (out == -1 && PyErr_Occurred()) {
      PyErr_Clear();
      return false;
    }
    return overflow == 0;
  }

  // An exact Python int that fits a long; anything else (bool, NumPy integers) is left to
  // the general path.
  static bool small_int(py::handle value, long& out) {
    if (!PyLong_CheckExact(value.ptr())) return false;
    int overflow = 0;
    out = PyLong_AsLongAndOverflow(value.ptr(), &overflow);
    if (out == -1 && PyErr_Occurred()) {
      PyErr_Clear();
      return false;
    }
    return overflow == 0;
  }

  // The target rank's layout and the byte offset of displacement disp.
  bool locate(py::handle rank, py::handle disp, const TargetLayout*& target, uint64_t& offset) {
    long r, d;
    if (!small_int(rank, r) || !small_int(disp, d) || r < 0 || r >= static_cast<long>(targets_.size()) || d < 0) {
      return false;
    }
    target = &targets_[r];
    if (static_cast<uint64_t>(d) > UINT64_MAX / target->unit) return false;
    rank_ = static_cast<int>(r);
    offset = static_cast<uint64_t>(d) * target->unit;
    return true;
  }

  ElementType element_type_of(PyObject* dtype) const {
    for (size_t i = 0; i < element_dtypes_.size(); ++i) {
      if (element_dtypes_[i].ptr() == dtype) return static_cast<ElementType>(i);
    }
    return ElementType::Bytes;
  }

  // array as a C-contiguous NumPy array whose dtype the target takes (writable if asked).
  bool operand(py::handle array, const TargetLayout& target, bool raw_ok, bool writable, Operand& out) const {
    const auto& api = py::detail::npy_api::get();
    if (!api.PyArray_Check_(array.ptr())) return false;
    auto* header = py::detail::array_proxy(array.ptr());
    int needed = py::detail::npy_api::NPY_ARRAY_C_CONTIGUOUS_ | (writable ? py::detail::npy_api::NPY_ARRAY_WRITEABLE_ : 0);
    if ((header->flags & needed) != needed) return false;
    if (header->descr == target.dtype) {
      out.type = target.type;
      out.bytes = target.itemsize;
    } else {
      // Another dtype: only into a raw window, and only a dtype of the table (canonical objects).
      ElementType type = element_type_of(header->descr);
      if (!(raw_ok && target.raw) || type == ElementType::Bytes) return false;
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
  std::vector<py::object> element_dtypes_, keep_;
  std::vector<TargetLayout> targets_;
  int rank_ = 0;  // the rank locate() found, for the call that follows it
};

}  // namespace

void register_direct_calls(py::module_& m) {
  py::class_<DirectCalls>(m, "DirectCalls")
      .def(py::init<std::shared_ptr<rma::Window>, const py::list&, const py::list&>(), py::arg("window"),
           py::arg("layout"), py::arg("element_dtypes"))
      .def("put", &DirectCalls::put)
      .def("get", &DirectCalls::get)
      .def("get_accumulate", &DirectCalls::get_accumulate)
      .def("fetch_and_op", &DirectCalls::fetch_and_op)
      .def("compare_and_swap", &DirectCalls::compare_and_swap)
      .def("flush", &DirectCalls::flush);
}
