// rma.MessageRequest (message_request.cpp): a nonblocking send or receive of rma.Comm until it
// completes. comm_object.cpp makes them; Python sees the type as rma.MessageRequest.
#pragma once

#include <Python.h>
#include <pybind11/pybind11.h>

#include <memory>

#include "runtime/communicator.hpp"

// A request complete at once (a send; a receive from PROC_NULL, with its source and tag).
PyObject* new_complete_request(int source, int tag);
// A request for the posted receive. finish: null, or a function the received object goes
// through before wait() returns it (the checker's, which takes off the sender's clock).
// raw: wait() returns the message's bytes as they came (a buffer receive), not unpickled.
PyObject* new_receive_request(std::shared_ptr<rma::PendingReceive> pending, PyObject* finish, bool raw = false);
void register_message_request_type(pybind11::module_& m);
