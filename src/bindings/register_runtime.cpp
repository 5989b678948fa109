#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "base/interrupts.hpp"
#include "base/malloc_tuning.hpp"
#include "fabric/provider_info.hpp"
#include "runtime/communicator.hpp"
#include "runtime/runtime.hpp"

namespace py = pybind11;

namespace {
std::vector<std::byte> to_bytes(const py::bytes& data) {
  std::string_view view = data;
  auto begin = reinterpret_cast<const std::byte*>(view.data());
  return {begin, begin + view.size()};
}
}  // namespace

void register_runtime(py::module_& m) {
  m.def("libfabric_version", &rma::libfabric_version, "The libfabric version in use.");
  m.def("chain_interrupt_handler", &rma::chain_interrupt_handler,
        "Let SIGINT interrupt blocking rma calls too (chains in front of Python's handler).");
  m.def("tune_malloc", &rma::tune_malloc,
        "Raise glibc's mmap and trim thresholds so that message buffers are reused (RMA_MALLOC_TUNING).");
  m.def("usable_providers", &rma::usable_providers,
        "libfabric providers on this machine that offer RDM endpoints with MSG, RMA and ATOMIC.");
  m.def("providers_that_know_sources", &rma::providers_that_know_sources,
        "Of the usable providers, those that tell where each message came from (FI_SOURCE).");

  py::class_<rma::Runtime, std::shared_ptr<rma::Runtime>>(m, "Runtime")
      .def(py::init([](int rank, int size, const std::string& provider, const std::string& node, double timeout,
                       int progress_sleep_us, const std::string& transport, double hang_report, bool fabric_sleep,
                       bool trust_network) {
             rma::RuntimeOptions options;
             options.rank = rank;
             options.size = size;
             options.provider = provider;
             options.node = node;
             options.timeout_seconds = timeout;
             options.progress_sleep_us = progress_sleep_us;
             options.transport = rma::parse_transport_setting(transport);
             options.hang_report_seconds = hang_report;
             options.fabric_sleep = fabric_sleep;
             options.trust_network = trust_network;
             py::gil_scoped_release release;
             return std::make_shared<rma::Runtime>(options);
           }),
           py::arg("rank"), py::arg("size"), py::arg("provider"), py::arg("node") = "", py::arg("timeout") = 300.0,
           py::arg("progress_sleep_us") = 1000, py::arg("transport") = "auto", py::arg("hang_report") = 10.0,
           py::arg("fabric_sleep") = false, py::arg("trust_network") = false,
           "transport: RMA_TRANSPORT, validated (ValueError): auto, shared-memory or libfabric. hang_report:\n"
           "RMA_HANG_REPORT, seconds after which a blocked call says so on stderr (<= 0: never). fabric_sleep:\n"
           "the job spans hosts, and an idle rank sleeps on the fabric's wait fd (RMA_FABRIC_SLEEP).\n"
           "trust_network: span hosts through a provider that cannot tell a message's source (RMA_TRUST_NETWORK).")
      .def_property_readonly("rank", &rma::Runtime::rank)
      .def_property_readonly("size", &rma::Runtime::size)
      .def_property_readonly("provider", &rma::Runtime::provider)
      .def_property_readonly("active", &rma::Runtime::active)
      .def_property_readonly(
          "transport_setting", [](const rma::Runtime& runtime) { return rma::to_string(runtime.options().transport); },
          "RMA_TRANSPORT as the job agreed on it at init: 'auto', 'shared-memory' or 'libfabric'.")
      .def(
          "host_of", [](const rma::Runtime& runtime, int rank) { return runtime.topology().host_of(rank); },
          py::arg("rank"),
          "The host number of a world rank: hosts are numbered from 0 in the order of their lowest rank.")
      .def(
          "same_host", [](const rma::Runtime& runtime, int a, int b) { return runtime.topology().same_host(a, b); },
          py::arg("a"), py::arg("b"), "Whether world ranks a and b run on one host.")
      .def_property_readonly(
          "host_ranks", [](const rma::Runtime& runtime) { return runtime.topology().host_ranks(); },
          "The world ranks on this rank's host, ascending (this rank among them).")
      .def_property_readonly(
          "host_count", [](const rma::Runtime& runtime) { return runtime.topology().host_count(); },
          "How many hosts the job runs on.")
      .def("address",
           [](const rma::Runtime& runtime) {
             auto address = runtime.address();
             return py::bytes(reinterpret_cast<const char*>(address.data()), address.size());
           })
      .def(
          "connect",
          [](rma::Runtime& runtime, const std::vector<py::bytes>& addresses, const std::vector<std::string>& hosts) {
            std::vector<std::vector<std::byte>> converted;
            for (const auto& address : addresses) converted.push_back(to_bytes(address));
            py::gil_scoped_release release;
            runtime.connect(converted, hosts);
          },
          py::arg("addresses"), py::arg("hosts"),
          "Every rank's address() and host identity (str or bytes; equal ones share a host).")
      .def_property_readonly(
          "knows_sources", [](rma::Runtime& runtime) { return runtime.transport().knows_sources(); },
          "Whether messages count only when their source address is one of the job's ranks (FI_SOURCE).")
      .def_property_readonly(
          "dropped_from_outside", [](rma::Runtime& runtime) { return runtime.transport().dropped_from_outside(); },
          "Messages dropped unread because they came from an address outside the job.")
      .def(
          "_send_frame_as_is",
          [](rma::Runtime& runtime, int target, const py::bytes& frame) {
            auto bytes = to_bytes(frame);
            py::gil_scoped_release release;
            runtime.transport().send_frame_as_is(target, bytes);
          },
          py::arg("target"), py::arg("frame"),
          "For tests of the receiver's checks only: a fragment (header and payload) sent as it is.")
      .def(
          "_send_message",
          [](rma::Runtime& runtime, int target, int handler, const py::bytes& payload) {
            auto bytes = to_bytes(payload);
            py::gil_scoped_release release;
            runtime.transport().send(target, static_cast<uint16_t>(handler), bytes);
          },
          py::arg("target"), py::arg("handler"), py::arg("payload"),
          "For tests of the receiver's checks only: a message of any content to any handler id.")
      .def("world", &rma::Runtime::world)
      .def("mark_peer_dead", &rma::Runtime::mark_peer_dead, py::arg("rank"), py::arg("unreachable") = false)
      .def("finalize", &rma::Runtime::finalize, py::arg("collective"), py::call_guard<py::gil_scoped_release>());
}
