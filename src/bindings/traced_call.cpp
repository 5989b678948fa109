#include "traced_call.hpp"

#include <Python.h>

#include "call_site.hpp"

thread_local TracedCall* TracedCall::current_ = nullptr;

void TracedCall::begin(const char* name, rma::trace::Kind kind, int64_t object) {
  const char* site = nullptr;
  try {
    site = call_site().c_str();
  } catch (...) {  // (Python could not say where: the record goes without its line)
    PyErr_Clear();
  }
  active_ = true;
  record_ =
      rma::trace::Record{rma::trace::ticks(), 0, name, site, nullptr, 0, object, -1, rma::trace::thread_number(), kind};
  outer_ = current_;
  current_ = this;
}

void TracedCall::end() {
  current_ = outer_;
  record_.end_ns = rma::trace::ticks();
  rma::trace::add(record_);
}
