// rma.Comm's reductions of arrays, Allreduce and Reduce (mpi4py's buffer forms), as compiled
// methods of rma._core.Comm: the one place their arguments are checked. In Python the checks
// cost 0.4-0.6 us a call, as much as the reduction of 8 bytes between two ranks in shared memory.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstring>
#include <span>
#include <string>

#include "arguments.hpp"
#include "base/errors.hpp"
#include "comm_object.hpp"
#include "constants.hpp"
#include "guarded_call.hpp"
#include "traced_call.hpp"

namespace py = pybind11;

namespace {

using arguments::Parameters;
using guarded_call::guarded;
using guarded_call::released;

std::string type_name(PyObject* value) {
  return py::str(py::handle(reinterpret_cast<PyObject*>(Py_TYPE(value))).attr("__name__"));
}

std::string dtype_name(PyObject* dtype) { return py::str(py::handle(dtype)); }

const py::detail::npy_api& numpy() { return py::detail::npy_api::get(); }

int flags_of(PyObject* array) { return py::detail::array_proxy(array)->flags; }

uint64_t size_of(PyObject* array) {
  auto* header = py::detail::array_proxy(array);
  uint64_t elements = 1;
  for (int i = 0; i < header->nd; ++i) elements *= static_cast<uint64_t>(header->dimensions[i]);
  return elements;
}

PyObject* dtype_of(PyObject* array) { return py::detail::array_proxy(array)->descr; }

// sendbuf as a C-contiguous array (np.ascontiguousarray's, a copy if its layout differs) of a
// dtype the core reduces.
py::object data_array(PyObject* sendbuf, const std::string& call, rma::ElementType& type) {
  py::object array;
  if (arguments::is_array(sendbuf) && (flags_of(sendbuf) & py::detail::npy_api::NPY_ARRAY_C_CONTIGUOUS_) != 0) {
    array = py::reinterpret_borrow<py::object>(sendbuf);
  } else {
    static PyObject* contiguous = py::object(py::module_::import("numpy").attr("ascontiguousarray")).release().ptr();
    array = py::reinterpret_steal<py::object>(PyObject_CallOneArg(contiguous, sendbuf));
    if (!array) throw py::error_already_set();
  }
  type = constants::element_type_of(dtype_of(array.ptr()));
  if (type == rma::ElementType::Bytes) {
    throw rma::ArgumentTypeError("rma: " + call + ": sendbuf has dtype " + dtype_name(dtype_of(array.ptr())) +
                                 ", which rma does not reduce");
  }
  return array;
}

// `value` checked as the array a result goes into: writable, data's dtype and size.
void check_result_array(PyObject* value, PyObject* data, const std::string& call, const char* name) {
  if (!arguments::is_array(value)) {
    throw rma::ArgumentTypeError("rma: " + call + ": " + name + " must be a NumPy array to receive the result, not " +
                                 type_name(value));
  }
  if ((flags_of(value) & py::detail::npy_api::NPY_ARRAY_WRITEABLE_) == 0) {
    throw rma::UsageError("rma: " + call + ": " + name + " is read-only");
  }
  if (!numpy().PyArray_EquivTypes_(dtype_of(value), dtype_of(data)) || size_of(value) != size_of(data)) {
    throw rma::UsageError("rma: " + call + ": " + name + " is " + std::to_string(size_of(value)) + " x " +
                          dtype_name(dtype_of(value)) + " but the data is " + std::to_string(size_of(data)) + " x " +
                          dtype_name(dtype_of(data)));
  }
}

// root -1: Allreduce (the result on every rank); else Reduce (on root).
PyObject* reduce_arrays(PyObject* self, PyObject* sendbuf, PyObject* recvbuf, PyObject* op_value, int root,
                        const std::string& call) {
  rma::ReduceOp op;
  if (op_value != nullptr && !constants::op_of(op_value, op)) {
    throw rma::ArgumentTypeError("rma: " + call + ": op must be an rma.Op (SUM, MAX...), not " + type_name(op_value));
  }
  if (op_value == nullptr) op = rma::ReduceOp::Sum;
  rma::ElementType type;
  py::object data = data_array(sendbuf, call, type);
  rma::Communicator& comm = comm_core_of(self);
  PyObject* target = nullptr;
  if (root < 0 || root == comm.rank()) {
    bool in_place = recvbuf == nullptr || recvbuf == Py_None;
    target = in_place ? sendbuf : recvbuf;
    check_result_array(target, data.ptr(), call, in_place ? "sendbuf (in place)" : "recvbuf");
  }
  auto* header = py::detail::array_proxy(data.ptr());
  std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(header->data),
                                   size_of(data.ptr()) * py::reinterpret_borrow<py::dtype>(header->descr).itemsize());
  TracedCall::note(-1, bytes.size());
  // Where the result goes: the target itself if C-contiguous, else a C-ordered copy of it that
  // NumPy copies back element by element.
  py::object staged;
  std::byte* out = nullptr;
  if (target != nullptr) {
    if ((flags_of(target) & py::detail::npy_api::NPY_ARRAY_C_CONTIGUOUS_) == 0) {
      staged = py::reinterpret_steal<py::object>(numpy().PyArray_NewCopy_(target, 0 /* NPY_CORDER */));
      if (!staged) throw py::error_already_set();
    }
    out = reinterpret_cast<std::byte*>(py::detail::array_proxy(staged ? staged.ptr() : target)->data);
  }
  rma::CallName named = [&call] { return call; };
  // (The arrays stay alive: this call's references hold them until it returns.)
  if (root < 0) {
    released([&] { comm.allreduce(bytes, {out, bytes.size()}, type, op, named); });
  } else {
    rma::Bytes reduced;
    released([&] { reduced = comm.reduce(bytes, type, op, root, named); });
    if (out == nullptr || reduced.empty()) Py_RETURN_NONE;
    // A stray message of another size must not write past the result.
    if (reduced.size() != bytes.size()) {
      throw rma::UsageError("rma: " + call + ": rank " + std::to_string(comm.rank()) + " passed " +
                            std::to_string(bytes.size()) + " bytes but the reduction holds " +
                            std::to_string(reduced.size()) + ": every rank must pass the same dtype and size");
    }
    std::memcpy(out, reduced.data(), reduced.size());
  }
  if (staged && numpy().PyArray_CopyInto_(target, staged.ptr()) < 0) throw py::error_already_set();
  Py_RETURN_NONE;
}

constexpr arguments::Parameter kSendbuf{"sendbuf"}, kRecvbuf{"recvbuf", "None"}, kOp{"op", "rma.Op.SUM"};
constexpr Parameters kAllreduce{"Allreduce", {kSendbuf, kRecvbuf, kOp}, 3, "comm"};
constexpr Parameters kReduce{"Reduce", {kSendbuf, kRecvbuf, kOp, {"root", "0"}}, 4, "comm"};
constexpr Parameters kCheckResult{"_check_result", {{"value"}, {"data"}, {"call"}, {"name"}}, 4, "comm"};

PyObject* allreduce(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  return guarded([&]() -> PyObject* {
    PyObject* slot[3];
    arguments::match(kAllreduce, args, nargs, kwnames, slot);
    TracedCall traced_call("comm.Allreduce", rma::trace::Kind::Collective,
                           [self] { return comm_core_of(self).context(); });
    return reduce_arrays(self, slot[0], slot[1], slot[2], -1, "comm.Allreduce");
  });
}

PyObject* reduce(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  return guarded([&]() -> PyObject* {
    PyObject* slot[4];
    arguments::match(kReduce, args, nargs, kwnames, slot);
    TracedCall traced_call("comm.Reduce", rma::trace::Kind::Collective,
                           [self] { return comm_core_of(self).context(); });
    int root = slot[3] != nullptr ? comm_number(slot[3], "Reduce", "root", false, false) : 0;
    return reduce_arrays(self, slot[0], slot[1], slot[2], root, "comm.Reduce");
  });
}

// Bcast's check of its buffer (rma.Comm.Bcast, in Python), by the rule the reductions use.
PyObject* check_result(PyObject*, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  return guarded([&]() -> PyObject* {
    PyObject* slot[4];
    arguments::match(kCheckResult, args, nargs, kwnames, slot);
    check_result_array(slot[0], slot[1], py::str(slot[2]), py::str(slot[3]).cast<std::string>().c_str());
    Py_RETURN_NONE;
  });
}

const MethodSpec kArrayMethods[] = {
    {kAllreduce, allreduce,
     "Combine every rank's array element-wise with `op`; the result lands in `recvbuf` on every rank.\n\n"
     "Arrays of numbers (the dtypes windows take), the same size on every rank; `recvbuf` a\n"
     "writable array of that dtype and size. Without `recvbuf`, the result replaces `sendbuf`\n"
     "(in place). The mpi4py spelling; for objects, use ``allreduce``.\n"
     "Example: ``comm.Allreduce(local_sums)`` (in place)."},
    {kReduce, reduce,
     "As ``Allreduce``, with the result on `root` only (recvbuf is ignored elsewhere).\n\n"
     "Example: ``comm.Reduce(partial, total, op=rma.MAX)  # total filled on rank 0``."},
    {kCheckResult, check_result,
     "Raise unless array `value` can receive a result of `data`'s dtype and size (writable)."},
};

}  // namespace

std::span<const MethodSpec> comm_array_methods() { return kArrayMethods; }
