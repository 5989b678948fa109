// The single place where a libfabric return code becomes an exception.
#pragma once

#include <string>

#include "base/errors.hpp"

namespace rma::fabric {

// A libfabric call failed. what() reads "<call>: <fi_strerror> (<code>)[: context]".
class FabricError : public RmaError {
 public:
  FabricError(std::string call, int code, const std::string& context = {});
  const std::string& call() const noexcept { return call_; }
  int code() const noexcept { return code_; }  // the positive FI_E* / errno value

 private:
  std::string call_;
  int code_;
};

// Throws FabricError when rc is negative; returns rc otherwise (some calls return counts).
// -FI_EAGAIN is not an error but a request to progress and retry: callers that can see it
// test for it before calling check().
inline long check(long rc, const char* call, const std::string& context = {}) {
  if (rc < 0) throw FabricError(call, static_cast<int>(-rc), context);
  return rc;
}

}  // namespace rma::fabric
