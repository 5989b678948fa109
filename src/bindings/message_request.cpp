// rma.MessageRequest: what comm.isend and comm.irecv return.
//
// A receive's message goes from the core into the request with no Python code in between, and
// is kept there (as its bytes, then as the object) until wait() returns it: a Ctrl-C, or an
// unpickling that fails, leaves the message in the request, and the next wait() returns it.
// (A request written in Python lost the message to a Ctrl-C that landed after the core gave it
// up and before Python stored it.)
#include "message_request.hpp"

#include <string>

#include "arguments.hpp"
#include "guarded_call.hpp"
#include "method_object.hpp"
#include "pickled.hpp"
#include "traced_call.hpp"

namespace py = pybind11;

// (Named, not anonymous: the unity build may put this file together with epoch_object.cpp.)
namespace message_request {

using guarded_call::guarded;
using guarded_call::released;

struct RequestObject {
  PyObject_HEAD
  std::shared_ptr<rma::PendingReceive>* pending;  // until the core gave up the message
  PyObject* data;                                 // the message's bytes, until unpickled
  PyObject* value;                                // the object (None for a send), once unpickled
  PyObject* finish;                               // applied to the object once, before wait() returns it; may be null
  int source;
  int tag;
  bool done;       // value is what wait() returns
  bool raw;        // value is the message's bytes (not unpickled)
  bool cancelled;  // cancel() withdrew the receive before a message matched it
};

RequestObject* as_request(PyObject* self) { return reinterpret_cast<RequestObject*>(self); }

PyTypeObject* request_type();

RequestObject* allocate() {
  auto* request = PyObject_New(RequestObject, request_type());
  if (request == nullptr) throw py::error_already_set();
  request->pending = nullptr;
  request->data = request->value = request->finish = nullptr;
  request->source = request->tag = -1;
  request->done = request->raw = request->cancelled = false;
  return request;
}

// Each step keeps what it made before the next can fail, so that a failure (an interrupt
// inside unpickling, the checker's function) is retried from there by the next wait().
void complete(RequestObject* request, bool wait) {
  if (request->pending != nullptr) {
    // A reference of this wait's own, held while the GIL is released: another thread's cancel()
    // may drop the request's meanwhile, and the receive must outlive this wait (which, its
    // receive withdrawn, then ends at the deadline).
    std::shared_ptr<rma::PendingReceive> pending = *request->pending;
    bool arrived = true;
    if (wait) {
      rma::Received received;
      released([&] { received = pending->wait(); });
      request->data =
          PyBytes_FromStringAndSize(reinterpret_cast<const char*>(received.data.data()), received.data.size());
      request->source = received.source;
      request->tag = received.tag;
      delete request->pending;  // (not cancelled: a cancelled receive is never filled)
      request->pending = nullptr;
      if (request->data == nullptr) throw py::error_already_set();  // (out of memory: the message is lost)
    } else {
      released([&] { arrived = pending->test(); });
      if (arrived) complete(request, true);  // (returns at once)
      return;
    }
  }
  if (request->data != nullptr) {
    if (request->raw) {
      request->value = request->data;  // (the reference moves)
      request->data = nullptr;
    } else {
      request->value = pickled::loads(request->data);
      if (request->value == nullptr) throw py::error_already_set();
      Py_CLEAR(request->data);
    }
  }
  if (request->finish != nullptr) {
    PyObject* finished = PyObject_CallOneArg(request->finish, request->value);
    if (finished == nullptr) throw py::error_already_set();
    Py_SETREF(request->value, finished);
    Py_CLEAR(request->finish);
  }
  request->done = true;
}

void fill(PyObject* status, const RequestObject* request) {
  pickled::fill_status(status, request->source, request->tag);
}

constexpr arguments::Parameters kRequestWait{"wait", {{"status", "None"}}, 1, "MessageRequest"};
constexpr arguments::Parameters kRequestTest{"test", {{"status", "None"}}, 1, "MessageRequest"};

PyObject* wait(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  return guarded([&]() -> PyObject* {
    PyObject* status;
    arguments::match(kRequestWait, args, nargs, kwnames, &status);
    RequestObject* request = as_request(self);
    if (!request->done) {
      // (In the trace, the blocking part of an irecv; a request knows no communicator.)
      TracedCall traced_call("request.wait", rma::trace::Kind::Message, [] { return int64_t{-1}; });
      complete(request, true);
    }
    fill(status, request);
    return Py_NewRef(request->value);
  });
}

PyObject* test(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  return guarded([&]() -> PyObject* {
    PyObject* status;
    arguments::match(kRequestTest, args, nargs, kwnames, &status);
    RequestObject* request = as_request(self);
    if (!request->done) complete(request, false);
    if (request->done) fill(status, request);
    return PyBool_FromLong(request->done);
  });
}

constexpr arguments::Parameters kRequestCancel{"cancel", {}, 0, "MessageRequest"};

// MPI_Cancel of a receive: withdrawn if no message has matched it yet, else it completes as usual.
PyObject* cancel(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  return guarded([&]() -> PyObject* {
    arguments::match(kRequestCancel, args, nargs, kwnames, nullptr);
    RequestObject* request = as_request(self);
    if (!request->done && request->pending != nullptr && (*request->pending)->cancel()) {
      delete request->pending;
      request->pending = nullptr;
      request->value = Py_NewRef(Py_None);
      request->source = request->tag = -1;
      request->done = request->cancelled = true;
    }
    return PyBool_FromLong(request->cancelled);
  });
}

const MethodSpec kRequestMethods[] = {
    {kRequestWait, wait,
     "Wait for completion; return the received object (None for a send) and fill `status`.\n\n"
     "An interrupted wait() keeps the message: the next wait() returns it."},
    {kRequestTest, test, "Return whether the request has completed; fill `status` when it has (receives)."},
    {kRequestCancel, cancel,
     "Withdraw a receive that no message has matched yet; return whether it is cancelled (then\n"
     "``wait()`` returns None at once and the message goes to another receive)."},
};

PyObject* request_repr(PyObject* self) {
  return PyUnicode_FromFormat("<rma.MessageRequest %s>", as_request(self)->done ? "done" : "pending");
}

// A request dropped unfinished gives its message (if one came) to the next matching receive:
// the core's PendingReceive withdraws itself.
void request_dealloc(PyObject* self) {
  RequestObject* request = as_request(self);
  delete request->pending;
  Py_CLEAR(request->data);
  Py_CLEAR(request->value);
  Py_CLEAR(request->finish);
  PyObject_Free(self);
}

PyTypeObject* request_type() {
  static PyTypeObject type = [] {
    PyTypeObject t =
        compiled_type("rma.MessageRequest",
                      "A nonblocking send or receive (``comm.isend``, ``comm.irecv``) until it completes.\n\n"
                      "``wait()`` returns the received object (None for a send); ``test()`` says whether\n"
                      "``wait()`` would return at once. A receive posted by ``irecv`` takes its message in posting\n"
                      "order, before a later ``recv`` with the same source and tag. A request dropped before its\n"
                      "``wait()`` gives its message (if one came) to the next matching receive: nothing is lost.",
                      sizeof(RequestObject), 0, nullptr, request_dealloc);
    t.tp_repr = request_repr;
    return t;
  }();
  return &type;
}

}  // namespace message_request

PyObject* new_complete_request(int source, int tag) {
  message_request::RequestObject* request = message_request::allocate();
  request->value = Py_NewRef(Py_None);
  request->source = source;
  request->tag = tag;
  request->done = true;
  return reinterpret_cast<PyObject*>(request);
}

PyObject* new_receive_request(std::shared_ptr<rma::PendingReceive> pending, PyObject* finish, bool raw) {
  message_request::RequestObject* request = message_request::allocate();
  request->raw = raw;
  request->pending = new std::shared_ptr<rma::PendingReceive>(std::move(pending));
  request->finish = finish != nullptr && finish != Py_None ? Py_NewRef(finish) : nullptr;
  return reinterpret_cast<PyObject*>(request);
}

void register_message_request_type(py::module_& m) {
  if (PyType_Ready(message_request::request_type()) < 0) throw py::error_already_set();
  for (const MethodSpec& spec : message_request::kRequestMethods) add_method(message_request::request_type(), spec);
  m.add_object("MessageRequest", py::handle(reinterpret_cast<PyObject*>(message_request::request_type())));
}
