// The error types of the core. The bindings map each one, once, to a Python class of
// rma.errors; nothing else in the core knows about Python.
#pragma once

#include <cctype>
#include <stdexcept>
#include <string>

namespace rma {

// `text` without " on rank <rank>": an error's text names the rank once, at its start ("rma:
// rank 0: ..."), while the name of a window call says the rank too ("win.fence on rank 0 of
// window 1").
inline std::string without_rank_mention(std::string text, int rank) {
  std::string mention = " on rank " + std::to_string(rank);
  for (size_t at = text.find(mention); at != std::string::npos; at = text.find(mention, at + 1)) {
    size_t end = at + mention.size();
    if (end == text.size() || !std::isdigit(static_cast<unsigned char>(text[end])))
      return text.erase(at, mention.size());
  }
  return text;
}

// Base of every error the core raises on purpose.
class RmaError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A message from another rank that breaks the wire's rules: too short for what it says it
// holds, an offset or length that overflows, an id that names nothing. Thrown while a message
// is read at its target; the router then stops trusting the sender (message_router.hpp).
class MalformedMessage : public RmaError {
 public:
  using RmaError::RmaError;
};

// Another rank of the job died (its process ended without finalizing) or cannot be reached.
class PeerError : public RmaError {
 public:
  using RmaError::RmaError;
};

// A blocking call passed its deadline (RMA_TIMEOUT).
class TimeoutError : public RmaError {
 public:
  using RmaError::RmaError;
};

// A call that the window's current epoch does not permit.
class EpochError : public RmaError {
 public:
  using RmaError::RmaError;
};

// A target region outside the target's window.
class RangeError : public RmaError {
 public:
  using RmaError::RmaError;
};

// A blocking call gave up because the process was interrupted (SIGINT, see interrupts.hpp).
class Interrupted : public RmaError {
 public:
  using RmaError::RmaError;
};

// Memory that cannot be had: /dev/shm or a memory cgroup too small for a window, or no room
// left for one more mapping (vm.max_map_count, the address space). Python's MemoryError too.
class OutOfMemoryError : public RmaError {
 public:
  using RmaError::RmaError;
};

// A bad argument value detected by the core (a rank out of range, a tag out of range...):
// Python's ValueError.
class UsageError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// An argument of the wrong kind (an op that does not apply to the dtype, a type
// compare_and_swap does not take...): Python's TypeError.
class ArgumentTypeError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

}  // namespace rma
