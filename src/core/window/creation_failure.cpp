#include "window/creation_failure.hpp"

#include <new>
#include <typeinfo>

#include "base/errors.hpp"

namespace rma {

namespace {
std::string without_prefix(std::string text) { return text.rfind("rma: ", 0) == 0 ? text.substr(5) : text; }
}  // namespace

CreationFailure::CreationFailure(std::exception_ptr error) : error_(error) {
  try {
    std::rethrow_exception(error);
  } catch (const OutOfMemoryError& e) {
    kind_ = kOutOfMemory;
    text_ = without_prefix(e.what());
  } catch (const std::bad_alloc&) {
    kind_ = kOutOfMemory;
    text_ = "the process has no memory left (std::bad_alloc)";
  } catch (const std::exception& e) {
    kind_ = kOther;
    text_ = without_prefix(e.what());
  } catch (...) {
    kind_ = kOther;
    text_ = "an unknown exception";
  }
}

void CreationFailure::raise(const std::string& where, uint64_t open_windows) const {
  std::string text = "rma: " + where + ": " + text_ + " (" + std::to_string(open_windows) +
                     (open_windows == 1 ? " other window is" : " other windows are") + " open in this process)";
  try {
    std::rethrow_exception(error_);
  } catch (const OutOfMemoryError& e) {
    if (typeid(e) == typeid(OutOfMemoryError)) throw OutOfMemoryError(text);
    throw;
  } catch (const RmaError& e) {
    // (A subclass, FabricError or Interrupted say, is thrown as it came: its class means more
    // than the name of the call would add.)
    if (typeid(e) == typeid(RmaError)) throw RmaError(text);
    throw;
  }
}

void CreationFailure::raise_for_peer(Kind kind, const std::string& text, int peer, const std::string& where) {
  std::string told =
      "rma: " + where + ": rank " + std::to_string(peer) + " could not make its part of the window: " + text;
  if (kind == kOutOfMemory) throw OutOfMemoryError(told);
  throw RmaError(told);
}

}  // namespace rma
