// The origin and result arrays of a rank's calls that have not completed at this rank yet,
// under RMA_CHECK: which completion frees which, and what a change before then is reported as.
//
// spec/002: an origin array must not be changed, nor a result array read or changed, until the
// call completed at the origin (a flush, flush_local, unlock, fence, complete, or the wait of
// its request). rma copies small origins at once on one host, but not a large put through
// libfabric, which reads the array in place until then; and it fills a result some time before
// that completion through a network. So a watch keeps a digest (byte_digest.hpp) of the array
// as it was at the call and compares it at the completion; a result array's call fills a
// private buffer, which the completion copies into the array after the comparison.
//
// Each watched array is also pending in the process's PendingMemory (pending_memory.hpp) until
// its watch ends: a second call into its bytes, and the program's reads of a pending result,
// are found there.
//
// The arrays themselves are the holder's (the bindings': NumPy arrays and their buffers): a
// watch names its array by the slot the holder keeps it in.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "check/access.hpp"
#include "check/pending_memory.hpp"

namespace rma::check {

// Where the holder keeps one watched array (and a result's private buffer).
using ArraySlot = uint32_t;

// What a completion asks of the holder of the arrays.
class ArrayHolder {
 public:
  // The digest of the array's bytes as they are now (digest_of, in C order).
  virtual uint64_t digest(ArraySlot slot) = 0;
  // The addresses of the array's bytes in this process, into `bytes` (cleared first).
  virtual void memory(ArraySlot slot, Spans& bytes) = 0;
  // A result array's call completed: what it filled goes into the array.
  virtual void deliver(ArraySlot slot) = 0;
  // The watch is over: the slot and what it holds may go.
  virtual void release(ArraySlot slot) = 0;

 protected:
  ~ArrayHolder() = default;
};

struct ArrayWatch {
  int target;           // the call's
  uint64_t serial;      // the call's (a request completes its own call's watches)
  ArraySlot slot;       // the array's
  uint64_t digest;      // of its bytes at the call
  AccessRef access;     // the call's record (for the message)
  bool result = false;  // a result array (else an origin)
  MemoryId memory = 0;  // its entry in the PendingMemory (set by add)
  bool told = false;    // a change of it was told at its line (set as it finishes)
};

class ArrayWatches {
 public:
  ArrayWatches(ArrayHolder& holder, PendingMemory& memory) : holder_(holder), memory_(memory) {}

  // A call's array, watched from now on (in call order). Returns the report when it shares
  // bytes with another pending call's array and one of them is a result.
  std::optional<std::string> add(ArrayWatch watch);
  size_t size() const noexcept { return watches_.size(); }

  // Finishes the watches of the calls that completed at this rank: to targets (a flush,
  // flush_local, unlock or complete), every call (fence, free), or one request's call. Each
  // finished array is compared with its digest, then results get what their calls filled, in
  // call order; the slots are released. Returns the report of the first array found changed.
  std::optional<std::string> finish_targets(std::span<const int> targets);
  std::optional<std::string> finish_all();
  std::optional<std::string> finish_request(int target, uint64_t serial);

 private:
  template <class Done>
  std::optional<std::string> finish(Done&& done);

  ArrayHolder& holder_;
  PendingMemory& memory_;
  std::vector<ArrayWatch> watches_;    // in call order
  std::vector<ArrayWatch> finishing_;  // (memory reused by each completion)
  Spans bytes_;                        // (memory reused by each add)
};

}  // namespace rma::check
