// rma._core.Comm's messages of raw bytes, for the mpi4py facade's buffer calls (Send, Recv,
// Ssend, Probe, Mprobe...; python/rma/compat/point_to_point.py): the bytes of a buffer go as
// they are, never pickled, so a receive's count is the bytes sent. Also the synchronous sends
// (which the facade's ssend of objects uses too, with the pickle as its bytes) and the probes.
#include <pybind11/pybind11.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "arguments.hpp"
#include "base/errors.hpp"
#include "comm_object.hpp"
#include "guarded_call.hpp"
#include "message_request.hpp"
#include "traced_call.hpp"
#include "window/epochs.hpp"

namespace py = pybind11;

// (Named, not anonymous: the unity build puts this file together with comm_object.cpp.)
namespace comm_raw {

using arguments::Parameters;
using guarded_call::guarded;
using guarded_call::released;

// A buffer argument's bytes, held until this goes (so the GIL can be released meanwhile).
class HeldBuffer {
 public:
  HeldBuffer(PyObject* value, const char* call) {
    if (PyObject_GetBuffer(value, &view_, PyBUF_SIMPLE) < 0) {
      PyErr_Clear();
      throw rma::ArgumentTypeError(std::string("rma: comm.") + call +
                                   ": data must be a contiguous buffer (bytes, memoryview, array)");
    }
  }
  ~HeldBuffer() { PyBuffer_Release(&view_); }
  HeldBuffer(const HeldBuffer&) = delete;
  HeldBuffer& operator=(const HeldBuffer&) = delete;
  std::span<const std::byte> bytes() const {
    return {static_cast<const std::byte*>(view_.buf), static_cast<size_t>(view_.len)};
  }

 private:
  Py_buffer view_{};
};

constexpr arguments::Parameter kData{"data"}, kDest{"dest"}, kSource{"source"}, kTag{"tag"}, kWait{"wait"};
constexpr Parameters kSendRaw{"_send_raw", {kData, kDest, kTag}, 3, "comm"};
constexpr Parameters kSsendRaw{"_ssend_raw", {kData, kDest, kTag}, 3, "comm"};
constexpr Parameters kSsendDone{"_ssend_done", {kDest, {"id"}, kWait}, 3, "comm"};
constexpr Parameters kIrecvRaw{"_irecv_raw", {kSource, kTag}, 2, "comm"};
constexpr Parameters kProbe{"_probe", {kSource, kTag, kWait}, 3, "comm"};
constexpr Parameters kMprobe{"_mprobe", {kSource, kTag, kWait}, 3, "comm"};

PyObject* send_raw(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  return guarded([&]() -> PyObject* {
    PyObject* slot[3];
    arguments::match(kSendRaw, args, nargs, kwnames, slot);
    int dest = comm_number(slot[1], "send", "dest", false, true);
    int tag = comm_number(slot[2], "send", "tag", false, false);
    if (dest == rma::kProcNull) Py_RETURN_NONE;
    HeldBuffer data(slot[0], "send");
    rma::Communicator& comm = comm_core_of(self);
    TracedCall traced_call("comm.Send", rma::trace::Kind::Message, [&] { return comm.context(); });
    TracedCall::note_peer(comm.members(), dest, data.bytes().size());
    released([&] { comm.send(data.bytes(), dest, tag); });
    Py_RETURN_NONE;
  });
}

PyObject* ssend_raw(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  return guarded([&]() -> PyObject* {
    PyObject* slot[3];
    arguments::match(kSsendRaw, args, nargs, kwnames, slot);
    int dest = comm_number(slot[1], "ssend", "dest", false, true);
    int tag = comm_number(slot[2], "ssend", "tag", false, false);
    if (dest == rma::kProcNull) return PyLong_FromLong(-1);
    HeldBuffer data(slot[0], "ssend");
    rma::Communicator& comm = comm_core_of(self);
    TracedCall traced_call("comm.Ssend", rma::trace::Kind::Message, [&] { return comm.context(); });
    TracedCall::note_peer(comm.members(), dest, data.bytes().size());
    uint64_t id = 0;
    released([&] { id = comm.send_synchronous(data.bytes(), dest, tag); });
    return PyLong_FromUnsignedLongLong(id);
  });
}

PyObject* ssend_done(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  return guarded([&]() -> PyObject* {
    PyObject* slot[3];
    arguments::match(kSsendDone, args, nargs, kwnames, slot);
    int dest = comm_number(slot[0], "ssend", "dest", false, false);
    uint64_t id = static_cast<uint64_t>(arguments::integer(slot[1], "ssend", "id", "comm"));
    bool wait = PyObject_IsTrue(slot[2]) == 1;
    rma::Communicator& comm = comm_core_of(self);
    bool done = true;
    if (wait) {
      TracedCall traced_call("request.wait", rma::trace::Kind::Message, [&] { return comm.context(); });
      TracedCall::note_peer(comm.members(), dest, 0);
      released([&] { comm.wait_synchronous(dest, id); });
    } else {
      released([&] { done = comm.synchronous_matched(dest, id); });
    }
    return PyBool_FromLong(done);
  });
}

PyObject* irecv_raw(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  return guarded([&]() -> PyObject* {
    PyObject* slot[2];
    arguments::match(kIrecvRaw, args, nargs, kwnames, slot);
    int source = comm_number(slot[0], "irecv", "source", true, true);
    int tag = comm_number(slot[1], "irecv", "tag", true, false);
    if (source == rma::kProcNull) return new_complete_request(rma::kProcNull, rma::Communicator::kAnyTag);
    rma::Communicator& comm = comm_core_of(self);
    TracedCall traced_call("comm.Irecv", rma::trace::Kind::Message, [&] { return comm.context(); });
    TracedCall::note_peer(comm.members(), source, 0);
    return new_receive_request(comm.irecv(source, tag, "recv"), nullptr, /*raw=*/true);
  });
}

PyObject* probe(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  return guarded([&]() -> PyObject* {
    PyObject* slot[3];
    arguments::match(kProbe, args, nargs, kwnames, slot);
    int source = comm_number(slot[0], "probe", "source", true, false);
    int tag = comm_number(slot[1], "probe", "tag", true, false);
    bool wait = PyObject_IsTrue(slot[2]) == 1;
    rma::Communicator& comm = comm_core_of(self);
    std::optional<rma::Communicator::Probed> seen;
    if (wait) {
      released([&] { seen = comm.probe(source, tag); });
    } else {
      released([&] { seen = comm.iprobe(source, tag); });
    }
    if (!seen) Py_RETURN_NONE;
    return Py_BuildValue("(iin)", seen->source, seen->tag, static_cast<Py_ssize_t>(seen->bytes));
  });
}

PyObject* mprobe(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  return guarded([&]() -> PyObject* {
    PyObject* slot[3];
    arguments::match(kMprobe, args, nargs, kwnames, slot);
    int source = comm_number(slot[0], "mprobe", "source", true, false);
    int tag = comm_number(slot[1], "mprobe", "tag", true, false);
    bool wait = PyObject_IsTrue(slot[2]) == 1;
    rma::Communicator& comm = comm_core_of(self);
    std::optional<rma::Received> taken;
    if (wait) {
      released([&] { taken = comm.mprobe(source, tag); });
    } else {
      released([&] { taken = comm.improbe(source, tag); });
    }
    if (!taken) Py_RETURN_NONE;
    py::object data = py::reinterpret_steal<py::object>(PyBytes_FromStringAndSize(
        reinterpret_cast<const char*>(taken->data.data()), static_cast<Py_ssize_t>(taken->data.size())));
    if (!data) throw py::error_already_set();
    return Py_BuildValue("(iiO)", taken->source, taken->tag, data.ptr());
  });
}

const MethodSpec kRawMethods[] = {
    {kSendRaw, send_raw, "Send the bytes of buffer `data` as they are (not pickled) to `dest` with `tag`."},
    {kSsendRaw, ssend_raw,
     "Send `data` synchronously: return the send's id, which ``_ssend_done`` asks about (-1 for\n"
     "``PROC_NULL``: nothing to wait for)."},
    {kSsendDone, ssend_done,
     "Whether the synchronous send `id` to `dest` has matched a receive there (true once); with\n"
     "`wait`, wait for it."},
    {kIrecvRaw, irecv_raw, "Post a receive whose ``wait()`` returns the message's bytes (not unpickled)."},
    {kProbe, probe,
     "(source, tag, bytes) of the message a receive of (`source`, `tag`) would take, left in place;\n"
     "None if there is none yet and not `wait`."},
    {kMprobe, mprobe,
     "(source, tag, bytes) of that message taken out (no other receive can get it); None if there\n"
     "is none yet and not `wait`."},
};

}  // namespace comm_raw

std::span<const MethodSpec> comm_raw_methods() { return comm_raw::kRawMethods; }
