#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "base/errors.hpp"
#include "runtime/communicator.hpp"
#include "traced_call.hpp"

namespace py = pybind11;
using rma::trace::Kind;

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
      .def_property_readonly("barrier_slot", &Communicator::barrier_slot,
                             "The slot of rank 0's barrier board barrier() meets in (-1: through messages).")
      .def_property_readonly("host_ranks", &Communicator::host_ranks,
                             "The ranks of the members on this rank's host, ascending (this rank among them).")
      .def("barrier",
           [](Communicator& comm) {
             TracedCall traced_call("comm.barrier", Kind::Collective, [&] { return comm.context(); });
             py::gil_scoped_release release;
             comm.barrier();
           })
      .def(
          "bcast",
          [](Communicator& comm, const py::bytes& data, int root, const std::string& call) {
            auto bytes = view(data);
            TracedCall traced_call(traced_name(call), Kind::Collective, [&] { return comm.context(); });
            TracedCall::note(-1, bytes.size());
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
            TracedCall traced_call(traced_name(call), Kind::Collective, [&] { return comm.context(); });
            TracedCall::note(-1, bytes.size());
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
            TracedCall traced_call(traced_name(call), Kind::Collective, [&] { return comm.context(); });
            TracedCall::note(-1, bytes.size());
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
            TracedCall traced_call(traced_name(call), Kind::Collective, [&] { return comm.context(); });
            py::gil_scoped_release release;
            return comm.split(color, key, [&call] { return call; });
          },
          py::arg("color"), py::arg("key"), py::arg("call") = "comm.split")
      .def("alone", &Communicator::alone, py::call_guard<py::gil_scoped_release>(),
           "A communicator of this rank alone (MPI's COMM_SELF); not collective.")
      .def("scatter",
           [](Communicator& comm, const py::object& items, int root) {
             TracedCall traced_call("comm.scatter", Kind::Collective, [&] { return comm.context(); });
             std::vector<rma::Bytes> list =
                 items.is_none() ? std::vector<rma::Bytes>{} : from_python(items.cast<py::list>());
             rma::Bytes mine;
             {
               py::gil_scoped_release release;
               mine = comm.scatter(list, root);
             }
             return to_python(mine);
           })
      .def("alltoall", [](Communicator& comm, const py::list& items) {
        TracedCall traced_call("comm.alltoall", Kind::Collective, [&] { return comm.context(); });
        std::vector<rma::Bytes> list = from_python(items);
        std::vector<rma::Bytes> result;
        {
          py::gil_scoped_release release;
          result = comm.alltoall(list);
        }
        return to_python(result);
      });
}
