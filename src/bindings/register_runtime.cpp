#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <array>
#include <cctype>
#include <string>

#include "base/interrupts.hpp"
#include "base/malloc_tuning.hpp"
#include "fabric/provider_info.hpp"
#include "host/shared_memory_check.hpp"
#include "runtime/communicator.hpp"
#include "runtime/runtime.hpp"

namespace py = pybind11;

namespace {
std::vector<std::byte> to_bytes(const py::bytes& data) {
  std::string_view view = data;
  auto begin = reinterpret_cast<const std::byte*>(view.data());
  return {begin, begin + view.size()};
}

// rma._core.TransportSetting: an enum.Enum whose members' values are the core's names of the
// settings (AUTO = "auto", SHARED_MEMORY = "shared-memory"...). The bootstrap passes the
// member of the name settings.py judged (the one place that reads RMA_TRANSPORT).
std::array<py::object, rma::kTransportSettingNames.size()>& transport_members() {
  static auto* members = new std::array<py::object, rma::kTransportSettingNames.size()>();  // (for the process)
  return *members;
}

py::object make_transport_settings() {
  py::list members;
  for (const char* name : rma::kTransportSettingNames) {
    std::string member = name;
    for (char& c : member) c = c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    members.append(py::make_tuple(member, name));
  }
  py::object made =
      py::module_::import("enum").attr("Enum")("TransportSetting", members, py::arg("module") = "rma._core");
  made.attr("__doc__") = "RMA_TRANSPORT's settings, as the core names them (rma._job.settings judges the variable).";
  for (size_t i = 0; i < rma::kTransportSettingNames.size(); ++i) {
    transport_members()[i] = made(rma::kTransportSettingNames[i]);
  }
  return made;
}

rma::TransportSetting transport_setting_of(const py::object& value) {
  for (size_t i = 0; i < transport_members().size(); ++i) {
    if (value.is(transport_members()[i])) return static_cast<rma::TransportSetting>(i);
  }
  throw py::type_error("transport must be an rma._core.TransportSetting, not " +
                       py::str(py::type::of(value).attr("__name__")).cast<std::string>());
}
}  // namespace

void register_runtime(py::module_& m) {
  m.def("libfabric_version", &rma::libfabric_version, "The libfabric version in use (loads it).");
  m.def("use_libfabric", &rma::use_libfabric, py::arg("candidates"),
        "The libfabrics the first load tries, in order: (file, origin) pairs, file '' for the system's, origin "
        "'system', 'bundled' or 'RMA_LIBFABRIC' (rma._job.settings.libfabric).");
  m.def("libfabric_path", &rma::libfabric_path, "The file of the loaded libfabric; '' before it is loaded.");
  m.def("libfabric_origin", &rma::libfabric_origin,
        "Where the loaded libfabric came from: 'system', 'bundled' or 'RMA_LIBFABRIC'; '' before it is loaded.");
  m.def("libfabric_loaded", &rma::libfabric_loaded,
        "Whether this process has loaded libfabric (a job on one host never does, unless asked to).");
  m.def("chain_interrupt_handler", &rma::chain_interrupt_handler,
        "Let SIGINT interrupt blocking rma calls too (chains in front of Python's handler).");
  m.def("tune_malloc", &rma::tune_malloc,
        "Raise glibc's mmap and trim thresholds so that message buffers are reused (RMA_MALLOC_TUNING).");
  m.def("usable_providers", &rma::usable_providers,
        "libfabric providers on this machine that offer RDM endpoints with MSG, RMA and ATOMIC.");
  m.def("providers_that_know_sources", &rma::providers_that_know_sources,
        "Of the usable providers, those that tell where each message came from (FI_SOURCE).");
  m.def(
      "provider_modes", &rma::provider_modes, py::arg("provider"), py::arg("node") = "", py::arg("sleep_fd") = false,
      py::arg("mr_strict") = false,
      "The (what, name) pairs of the modes an endpoint of provider bound to node would run under\n"
      "(provider, mr_mode, data_progress, control_progress, threading, cq_format, cq_wait), from the\n"
      "endpoint's own fi_getinfo. sleep_fd, mr_strict: as Runtime's fabric_sleep, mr_strict. FabricError when no such\n"
      "provider serves rma.");
  m.def("shared_segment_problem", &rma::shared_segment_problem,
        "'' when a small segment can be made in /dev/shm, as windows' are; else the error making it raised.");
  m.def("peer_read_problem", &rma::peer_read_problem,
        "'' when the kernel lets a process read another's memory (process_vm_readv), as ranks read\n"
        "their peers'; else why not.");

  m.attr("TransportSetting") = make_transport_settings();

  py::class_<rma::Runtime, std::shared_ptr<rma::Runtime>>(m, "Runtime")
      .def(py::init([](int rank, int size, const std::string& provider, const std::string& node, double timeout,
                       int progress_sleep_us, const py::object& transport, double hang_report, bool fabric_sleep,
                       bool trust_network, bool fabric, bool mr_strict) {
             rma::RuntimeOptions options;
             options.rank = rank;
             options.size = size;
             options.provider = provider;
             options.node = node;
             options.timeout_seconds = timeout;
             options.progress_sleep_us = progress_sleep_us;
             options.transport = transport_setting_of(transport);
             options.hang_report_seconds = hang_report;
             options.fabric_sleep = fabric_sleep;
             options.trust_network = trust_network;
             options.fabric = fabric;
             options.mr_strict = mr_strict;
             py::gil_scoped_release release;
             return std::make_shared<rma::Runtime>(options);
           }),
           py::arg("rank"), py::arg("size"), py::arg("provider"), py::arg("node") = "", py::arg("timeout") = 300.0,
           py::arg("progress_sleep_us") = 1000,
           py::arg("transport") = transport_members()[static_cast<size_t>(rma::TransportSetting::Auto)],
           py::arg("hang_report") = 10.0, py::arg("fabric_sleep") = false, py::arg("trust_network") = false,
           py::arg("fabric") = true, py::arg("mr_strict") = false,
           "transport: RMA_TRANSPORT, a TransportSetting (settings.py judged the variable). hang_report:\n"
           "RMA_HANG_REPORT, seconds after which a blocked call says so on stderr (<= 0: never). fabric_sleep:\n"
           "the job spans hosts, and an idle rank sleeps on the fabric's wait fd (RMA_FABRIC_SLEEP).\n"
           "trust_network: span hosts through a provider that cannot tell a message's source (RMA_TRUST_NETWORK).\n"
           "fabric: open a libfabric endpoint (false: every rank on this host, messages through the inboxes,\n"
           "libfabric never loaded; provider and node unused). mr_strict: descriptors for every local buffer\n"
           "handed to libfabric, checked at every data-transfer call (RMA_MR_STRICT).")
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
          "provider_modes", [](rma::Runtime& runtime) { return runtime.transport().provider_modes(); },
          "The (what, name) pairs of the modes its libfabric endpoint runs under, as provider_modes();\n"
          "empty without an endpoint.")
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
