#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

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
}  // namespace

void register_communicator(py::module_& m) {
  using rma::Communicator;
  py::class_<Communicator, std::shared_ptr<Communicator>>(m, "Communicator")
      .def_property_readonly("rank", &Communicator::rank)
      .def_property_readonly("size", &Communicator::size)
      .def_property_readonly("context", &Communicator::context)
      .def_property_readonly("members", &Communicator::members)
      .def("on_one_host", &Communicator::on_one_host, "Whether every member runs on one host.")
      .def_property_readonly("host_ranks", &Communicator::host_ranks,
                             "The ranks of the members on this rank's host, ascending (this rank among them).")
      .def("send",
           [](Communicator& comm, const py::bytes& data, int dest, int tag) {
             auto bytes = view(data);
             py::gil_scoped_release release;
             comm.send(bytes, dest, tag);
           })
      .def("recv",
           [](Communicator& comm, int source, int tag) {
             rma::Bytes data;
             {
               py::gil_scoped_release release;
               data = comm.recv(source, tag);
             }
             return to_python(data);
           })
      .def(
          "barrier", [](Communicator& comm) { comm.barrier(); }, py::call_guard<py::gil_scoped_release>())
      .def("bcast",
           [](Communicator& comm, const py::bytes& data, int root) {
             auto bytes = view(data);
             rma::Bytes result;
             {
               py::gil_scoped_release release;
               result = comm.bcast(rma::Bytes(bytes.begin(), bytes.end()), root);
             }
             return to_python(result);
           })
      .def("gather",
           [](Communicator& comm, const py::bytes& data, int root) {
             auto bytes = view(data);
             std::vector<rma::Bytes> items;
             {
               py::gil_scoped_release release;
               items = comm.gather(bytes, root);
             }
             return to_python(items);
           })
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
          "split", [](Communicator& comm, int color, int key) { return comm.split(color, key); }, py::arg("color"),
          py::arg("key"), py::call_guard<py::gil_scoped_release>());
}
