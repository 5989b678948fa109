#include "fabric/check.hpp"

#include "fabric/libfabric_library.hpp"

namespace rma::fabric {

namespace {
std::string describe(const std::string& call, int code, const std::string& context) {
  std::string text = call + ": " + error_text(code) + " (" + std::to_string(code) + ")";
  if (!context.empty()) text += ": " + context;
  return text;
}
}  // namespace

FabricError::FabricError(std::string call, int code, const std::string& context)
    : RmaError(describe(call, code, context)), call_(std::move(call)), code_(code) {}

}  // namespace rma::fabric
