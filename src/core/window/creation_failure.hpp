// What went wrong on a rank while it made its part of a window (its memory, its control block,
// its registration). Creating a window is collective: a rank that raised before the creation's
// exchange would leave the others waiting in it for good, and one that raised after it would
// leave them with a window it is not part of. So a rank that fails publishes its failure in the
// exchange in place of its part (Window::establish), and every member raises: the rank that
// failed its own error, the others one naming that rank and its reason.
#pragma once

#include <cstdint>
#include <exception>
#include <string>

namespace rma {

class CreationFailure {
 public:
  // How the other ranks raise it: as OutOfMemoryError (Python's MemoryError too), or RmaError.
  enum Kind : uint8_t { kNone = 0, kOutOfMemory = 1, kOther = 2 };

  CreationFailure() = default;
  // The failure the exception `error` (any std::exception) is.
  explicit CreationFailure(std::exception_ptr error);

  explicit operator bool() const noexcept { return kind_ != kNone; }
  Kind kind() const noexcept { return kind_; }
  // The error's text without its "rma: ", as the exchange carries it.
  const std::string& text() const noexcept { return text_; }

  // Throws this rank's own failure again, named: `where` says the call, the rank and the window
  // ("Window.allocate on rank 1 (allocate, uint8, shape (10,))"), and the text ends with how
  // many windows this process has open (the usual cause of a limit met). The core's own
  // errors keep their class; any other exception is thrown as it came.
  [[noreturn]] void raise(const std::string& where, uint64_t open_windows) const;
  // Throws, on a rank whose part was made, the failure that rank `peer` published.
  [[noreturn]] static void raise_for_peer(Kind kind, const std::string& text, int peer, const std::string& where);

 private:
  Kind kind_ = kNone;
  std::string text_;
  std::exception_ptr error_;
};

}  // namespace rma
