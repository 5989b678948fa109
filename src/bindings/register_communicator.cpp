#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>

#include "constants.hpp"
#include "errors.hpp"
#include "runtime/communicator.hpp"

namespace py = pybind11;

namespace {
std::span<const std::byte> view(const py::bytes& data) {
  // Valid without the GIL: the caller's reference keeps the immutable bytes object alive.
  std::string_view text = data;
  return {reinterpret_cast<const std::byte*>(text.data()), text.size()};
}

py::bytes to_python(const rma::Bytes& data) {
  return py::bytes(reinterpret_cast<const char*>(data.data()), data.size());
}

py::list to_python(const std::vector<rma::Bytes>& items) {
  py::list list;
  for (const auto& item : items) list.append(to_python(item));
  return list;
}

std::vector<rma::Bytes> from_python(const py::list& items) {
  std::vector<rma::Bytes> out;
  out.reserve(items.size());
  for (py::handle item : items) {
    std::string_view text = item.cast<py::bytes>();
    auto bytes = reinterpret_cast<const std::byte*>(text.data());
    out.emplace_back(bytes, bytes + text.size());
  }
  return out;
}

// The reductions of arrays: `data` and `result` are C-contiguous arrays the Python layer checked
// (same dtype and size, result writable); result is None where no result is due (reduce off root).
void reduce_arrays(rma::Communicator& comm, const py::array& data, const py::object& result, const py::object& op,
                   int root, const std::string& call) {
  rma::ReduceOp reduce_op;
  if (!constants::op_of(op.ptr(), reduce_op)) throw py::type_error("rma: " + call + ": op must be an rma.Op");
  rma::ElementType type = constants::element_type_of(reinterpret_cast<PyObject*>(data.dtype().ptr()));
  if (type == rma::ElementType::Bytes) {
    throw py::type_error("rma: " + call + ": cannot reduce elements of dtype " +
                         py::str(data.dtype()).cast<std::string>());
  }
  std::span<const std::byte> bytes(static_cast<const std::byte*>(data.data()), data.nbytes());
  std::byte* out = result.is_none() ? nullptr : static_cast<std::byte*>(result.cast<py::array>().mutable_data());
  rma::CallName named = [&call] { return call; };
  rma::Bytes reduced;
  {
    // The arrays stay alive: the caller's references hold them until this returns.
    py::gil_scoped_release release;
    reduced =
        root < 0 ? comm.allreduce(bytes, type, reduce_op, named) : comm.reduce(bytes, type, reduce_op, root, named);
  }
  if (out == nullptr || reduced.empty()) return;
  // A rank that passed another size (or a stray message) must not write past the result.
  if (reduced.size() != static_cast<size_t>(data.nbytes())) {
    throw rma::UsageError("rma: " + call + ": rank " + std::to_string(comm.rank()) + " passed " +
                          std::to_string(data.nbytes()) + " bytes but the reduction holds " +
                          std::to_string(reduced.size()) + ": every rank must pass the same dtype and size");
  }
  std::memcpy(out, reduced.data(), reduced.size());
}
}  // namespace

void register_communicator(py::module_& m) {
  using rma::Communicator;
  py::class_<Communicator, std::shared_ptr<Communicator>>(m, "Communicator")
      .def_property_readonly("rank", &Communicator::rank)
      .def_property_readonly("size", &Communicator::size)
      .def_property_readonly("context", &Communicator::context)
      .def_property_readonly("members", &Communicator::members)
      .def("on_one_host", &Communicator::on_one_host, "Whether every member runs on one host.")
      .def_property_readonly("barrier_in_shared_memory", &Communicator::barrier_in_shared_memory,
                             "Whether barrier() meets in shared memory (else through messages).")
      .def_property_readonly("host_ranks", &Communicator::host_ranks,
                             "The ranks of the members on this rank's host, ascending (this rank among them).")
      .def(
          "barrier", [](Communicator& comm) { comm.barrier(); }, py::call_guard<py::gil_scoped_release>())
      .def(
          "bcast",
          [](Communicator& comm, const py::bytes& data, int root, const std::string& call) {
            auto bytes = view(data);
            rma::Bytes result;
            {
              py::gil_scoped_release release;
              result = comm.bcast(rma::Bytes(bytes.begin(), bytes.end()), root, [&call] { return call; });
            }
            return to_python(result);
          },
          py::arg("data"), py::arg("root"), py::arg("call") = "comm.bcast")
      .def(
          "gather",
          [](Communicator& comm, const py::bytes& data, int root, const std::string& call) {
            auto bytes = view(data);
            std::vector<rma::Bytes> items;
            {
              py::gil_scoped_release release;
              items = comm.gather(bytes, root, [&call] { return call; });
            }
            return to_python(items);
          },
          py::arg("data"), py::arg("root"), py::arg("call") = "comm.gather")
      .def(
          "allgather",
          [](Communicator& comm, const py::bytes& data, const std::string& call) {
            auto bytes = view(data);
            std::vector<rma::Bytes> items;
            {
              py::gil_scoped_release release;
              items = comm.allgather(bytes, [&call] { return call; });
            }
            return to_python(items);
          },
          py::arg("data"), py::arg("call") = "comm.allgather",
          "call: the user's call it serves, named in its errors (\"Window.allocate\").")
      .def(
          "split",
          [](Communicator& comm, int color, int key, const std::string& call) {
            return comm.split(color, key, [&call] { return call; });
          },
          py::arg("color"), py::arg("key"), py::arg("call") = "comm.split", py::call_guard<py::gil_scoped_release>())
      .def("alone", &Communicator::alone, py::call_guard<py::gil_scoped_release>(),
           "A communicator of this rank alone (MPI's COMM_SELF); not collective.")
      .def("scatter",
           [](Communicator& comm, const py::object& items, int root) {
             std::vector<rma::Bytes> list =
                 items.is_none() ? std::vector<rma::Bytes>{} : from_python(items.cast<py::list>());
             rma::Bytes mine;
             {
               py::gil_scoped_release release;
               mine = comm.scatter(list, root);
             }
             return to_python(mine);
           })
      .def("alltoall",
           [](Communicator& comm, const py::list& items) {
             std::vector<rma::Bytes> list = from_python(items);
             std::vector<rma::Bytes> result;
             {
               py::gil_scoped_release release;
               result = comm.alltoall(list);
             }
             return to_python(result);
           })
      .def("reduce_arrays", &reduce_arrays, py::arg("data"), py::arg("result"), py::arg("op"), py::arg("root"),
           py::arg("call"), "Element-wise reduction of C-contiguous arrays into result; root -1: on every rank.");
}
