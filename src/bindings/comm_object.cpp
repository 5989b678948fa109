// rma._core.Comm: the compiled part of rma.Comm (python/rma/comm.py), its point-to-point
// calls (send, recv, sendrecv, isend, irecv) and the barrier: the one place their arguments are
// checked.
//
// In Python, a sendrecv went through four Python frames, five argument checks, pickle and two
// pybind11 calls: 1.1 us over the core's own 0.7 us, where mpi4py's whole call takes 0.9 us.
// Here one C call checks the arguments, pickles, and enters the core.
//
// It also makes a receive whole: a Ctrl-C (which Python handles between bytecodes, dropping
// what the call returned) is handled before the core gives its message up, never after.
//
// rma.Comm subclasses this type for the rest (collectives, splits) and sets `_core`, the
// pybind11 rma._core.Communicator this object also holds.
#include <pybind11/pybind11.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "arguments.hpp"
#include "base/errors.hpp"
#include "comm_object.hpp"
#include "guarded_call.hpp"
#include "message_request.hpp"
#include "method_object.hpp"
#include "pickled.hpp"
#include "runtime/communicator.hpp"
#include "traced_call.hpp"
#include "window/epochs.hpp"

namespace py = pybind11;

namespace {

using arguments::Parameters;
using guarded_call::guarded;
using guarded_call::released;

constexpr int kAny = rma::Communicator::kAnySource;  // (rma.ANY_SOURCE and rma.ANY_TAG alike)
static_assert(rma::Communicator::kAnyTag == kAny);

}  // namespace

int comm_number(PyObject* value, const char* call, const char* name, bool wildcard, bool proc_null) {
  int64_t given = arguments::integer(value, call, name, "comm");
  if (given > INT32_MAX) {
    throw rma::UsageError(std::string("rma: comm.") + call + ": " + name + " " + std::to_string(given) +
                          " is out of range");
  }
  // (The core checks the rest: a rank of this communicator, a tag up to its largest.)
  if (given >= 0 || (wildcard && given == kAny) || (proc_null && given == rma::kProcNull))
    return static_cast<int>(given);
  throw rma::UsageError(std::string("rma: comm.") + call + ": " + name + " must be >= 0, got " + std::to_string(given));
}

namespace {

void send_object(PyObject* self, PyObject* obj, int dest, int tag) {
  if (dest == rma::kProcNull) return;
  py::object data = py::reinterpret_steal<py::object>(pickled::dumps(obj));
  if (!data) throw py::error_already_set();
  // Valid without the GIL: `data` holds the immutable bytes until this returns.
  std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(PyBytes_AS_STRING(data.ptr())),
                                   PyBytes_GET_SIZE(data.ptr()));
  rma::Communicator& comm = comm_core_of(self);
  TracedCall::note_peer(comm.members(), dest, bytes.size());
  released([&] { comm.send(bytes, dest, tag); });
}

PyObject* receive_object(PyObject* self, int source, int tag, PyObject* status, const char* call) {
  if (source == rma::kProcNull) {
    pickled::fill_status(status, rma::kProcNull, kAny);
    Py_RETURN_NONE;
  }
  std::shared_ptr<rma::PendingReceive> pending = comm_core_of(self).irecv(source, tag, call);
  released([&] { pending->wait_arrived(); });
  // A Ctrl-C that came as the message did is raised here, not after this returns (Python would
  // drop the returned object to raise it): `pending` then goes with the message still in it,
  // which gives it back to the next matching receive.
  if (PyErr_CheckSignals() < 0) return nullptr;
  rma::Received received = pending->wait();  // (at once)
  TracedCall::note_peer(comm_core_of(self).members(), received.source, received.data.size());
  pickled::fill_status(status, received.source, received.tag);
  py::object data = py::reinterpret_steal<py::object>(
      PyBytes_FromStringAndSize(reinterpret_cast<const char*>(received.data.data()), received.data.size()));
  if (!data) throw py::error_already_set();
  return pickled::loads(data.ptr());
}

// The parameters of the calls (parameters.hpp: their signatures too).
constexpr arguments::Parameter kObj{"obj"}, kDest{"dest"}, kSource{"source"}, kTag{"tag", "0"},
    kStatus{"status", "None"};
constexpr Parameters kSend{"send", {kObj, kDest, kTag}, 3, "comm"};
constexpr Parameters kIsend{"isend", {kObj, kDest, kTag}, 3, "comm"};
constexpr Parameters kRecv{"recv", {kSource, kTag, kStatus}, 3, "comm"};
constexpr Parameters kSendrecv{
    "sendrecv",
    {kObj, kDest, {"sendtag", "0"}, {"source", "rma.ANY_SOURCE"}, {"recvtag", "rma.ANY_TAG"}, kStatus},
    3,
    "comm"};

// send's and isend's arguments (obj, dest, tag=0), checked, then the send.
void send_call(PyObject* self, const Parameters& parameters, PyObject* const* args, Py_ssize_t nargs,
               PyObject* kwnames) {
  PyObject* slot[3];
  arguments::match(parameters, args, nargs, kwnames, slot);
  int dest = comm_number(slot[1], parameters.method, "dest", false, true);
  int tag = slot[2] != nullptr ? comm_number(slot[2], parameters.method, "tag", false, false) : 0;
  send_object(self, slot[0], dest, tag);
}

// A point-to-point call in the trace (RMA_TRACE): its peer and bytes are noted as they are known.
TracedCall traced_message(PyObject* self, const char* name) {
  return TracedCall(name, rma::trace::Kind::Message, [self] { return comm_core_of(self).context(); });
}

PyObject* send(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  return guarded([&]() -> PyObject* {
    TracedCall traced_call = traced_message(self, "comm.send");
    send_call(self, kSend, args, nargs, kwnames);
    Py_RETURN_NONE;
  });
}

PyObject* recv(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  return guarded([&]() -> PyObject* {
    TracedCall traced_call = traced_message(self, "comm.recv");
    PyObject* slot[3];
    arguments::match(kRecv, args, nargs, kwnames, slot);
    int source = comm_number(slot[0], "recv", "source", true, true);
    int tag = slot[1] != nullptr ? comm_number(slot[1], "recv", "tag", true, false) : 0;
    return receive_object(self, source, tag, slot[2], "recv");
  });
}

PyObject* sendrecv(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  return guarded([&]() -> PyObject* {
    TracedCall traced_call = traced_message(self, "comm.sendrecv");
    PyObject* slot[6];
    arguments::match(kSendrecv, args, nargs, kwnames, slot);
    // Every argument checked before anything moves.
    int dest = comm_number(slot[1], "sendrecv", "dest", false, true);
    int sendtag = slot[2] != nullptr ? comm_number(slot[2], "sendrecv", "sendtag", false, false) : 0;
    int source = slot[3] != nullptr ? comm_number(slot[3], "sendrecv", "source", true, true) : kAny;
    int recvtag = slot[4] != nullptr ? comm_number(slot[4], "sendrecv", "recvtag", true, false) : kAny;
    send_object(self, slot[0], dest, sendtag);
    return receive_object(self, source, recvtag, slot[5], "sendrecv");
  });
}

constexpr Parameters kBarrier{"_barrier", {}, 0, "comm"};

PyObject* barrier(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  return guarded([&]() -> PyObject* {
    arguments::match(kBarrier, args, nargs, kwnames, nullptr);
    rma::Communicator& comm = comm_core_of(self);
    TracedCall traced_call("comm.barrier", rma::trace::Kind::Collective, [&] { return comm.context(); });
    released([&] { comm.barrier(); });
    Py_RETURN_NONE;
  });
}

constexpr Parameters kIrecv{"irecv", {kSource, kTag}, 2, "comm"};
constexpr Parameters kIrecvThen{"_irecv", {kSource, {"tag"}, {"finish"}}, 3, "comm"};

PyObject* isend(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  return guarded([&]() -> PyObject* {
    TracedCall traced_call = traced_message(self, "comm.isend");
    send_call(self, kIsend, args, nargs, kwnames);
    return new_complete_request(-1, -1);
  });
}

PyObject* receive_request(PyObject* self, PyObject* source_value, PyObject* tag_value, PyObject* finish) {
  int source = comm_number(source_value, "irecv", "source", true, true);
  int tag = tag_value != nullptr ? comm_number(tag_value, "irecv", "tag", true, false) : 0;
  if (source == rma::kProcNull) return new_complete_request(rma::kProcNull, kAny);
  TracedCall traced_call = traced_message(self, "comm.irecv");  // (posting it; request.wait waits)
  TracedCall::note_peer(comm_core_of(self).members(), source, 0);
  return new_receive_request(comm_core_of(self).irecv(source, tag), finish);
}

PyObject* irecv(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  return guarded([&]() -> PyObject* {
    PyObject* slot[2];
    arguments::match(kIrecv, args, nargs, kwnames, slot);
    return receive_request(self, slot[0], slot[1], nullptr);
  });
}

// irecv for the checker (rma.check.comm): `finish` takes the sender's clock off the object.
PyObject* irecv_then(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  return guarded([&]() -> PyObject* {
    PyObject* slot[3];
    arguments::match(kIrecvThen, args, nargs, kwnames, slot);
    return receive_request(self, slot[0], slot[1], slot[2]);
  });
}

const MethodSpec kCommMethods[] = {
    {kBarrier, barrier,
     "The barrier itself, which rma.Comm.barrier calls (so that a stack dump of a rank stuck in\n"
     "it shows a frame named barrier)."},
    {kSend, send,
     "Send `obj` to rank `dest` with `tag` (0 and up); return without waiting for the matching recv.\n\n"
     "A send to ``rma.PROC_NULL`` does nothing. Example: ``comm.send({\"step\": 3}, dest=1, tag=7)``."},
    {kRecv, recv,
     "Return the oldest object sent by rank `source` with `tag`, waiting for one.\n\n"
     "`source` may be ``rma.ANY_SOURCE`` and `tag` ``rma.ANY_TAG``; pass an ``rma.Status`` as\n"
     "`status` to learn the message's source and tag. A receive from ``rma.PROC_NULL`` returns\n"
     "None at once. Example: ``obj = comm.recv(rma.ANY_SOURCE, rma.ANY_TAG, status=st)``."},
    {kSendrecv, sendrecv,
     "Send `obj` to `dest` and return the object received from `source` (a shift or an exchange).\n\n"
     "Never deadlocks, as sends never wait for their recv. Example, a ring:\n"
     "``left = comm.sendrecv(x, (rank + 1) % size, source=(rank - 1) % size)``."},
    {kIsend, isend,
     "Send as ``send`` does and return a request, already complete (sends never wait for their recv).\n\n"
     "Example: ``req = comm.isend(block, (comm.rank + 1) % comm.size); ...; req.wait()``."},
    {kIrecv, irecv,
     "Post a receive (arguments as ``recv``) and return at once; ``request.wait()`` returns the object.\n\n"
     "Example: ``req = comm.irecv(0); ...; obj = req.wait()``."},
    {kIrecvThen, irecv_then,
     "irecv whose request passes the received object through finish(obj) once, before wait() returns it."},
};

// _core.Comm.__new__(cls, core): core is the rma._core.Communicator.
PyObject* comm_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  PyObject* core;
  static const char* names[] = {"core", nullptr};
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O:Comm", const_cast<char**>(names), &core)) return nullptr;
  return guarded([&]() -> PyObject* {
    auto held = std::make_unique<std::shared_ptr<rma::Communicator>>(
        py::cast<std::shared_ptr<rma::Communicator>>(py::handle(core)));
    PyObject* self = type->tp_alloc(type, 0);
    if (self == nullptr) return nullptr;
    reinterpret_cast<CommObject*>(self)->core = held.release();
    return self;
  });
}

void comm_dealloc(PyObject* self) {
  delete reinterpret_cast<CommObject*>(self)->core;
  Py_TYPE(self)->tp_free(self);
}

PyTypeObject* comm_type() {
  static PyTypeObject type = compiled_type("rma._core.Comm", "The compiled part of rma.Comm: the calls made in loops.",
                                           sizeof(CommObject), Py_TPFLAGS_BASETYPE, comm_new, comm_dealloc);
  return &type;
}

}  // namespace

void register_comm_type(py::module_& m) {
  register_message_request_type(m);
  m.attr("ANY_SOURCE") = rma::Communicator::kAnySource;
  m.attr("ANY_TAG") = rma::Communicator::kAnyTag;
  if (PyType_Ready(comm_type()) < 0) throw py::error_already_set();
  for (const MethodSpec& spec : kCommMethods) add_method(comm_type(), spec);
  for (const MethodSpec& spec : comm_array_methods()) add_method(comm_type(), spec);
  for (const MethodSpec& spec : comm_raw_methods()) add_method(comm_type(), spec);
  m.add_object("Comm", py::handle(reinterpret_cast<PyObject*>(comm_type())));
}
