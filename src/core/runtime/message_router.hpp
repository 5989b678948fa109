// Routing of active messages, whatever carried their fragments (the fabric, an inbox, or
// nothing for a message to oneself). At the sender: the sequence number of each message, per
// destination. At the receiver: the handler table, and the dispatch of arrived fragments,
// reassembled and in each source's order (message_assembler.hpp), to their handlers.
//
// Dispatch is one thread at a time: arrived fragments wait in a queue that whichever thread
// holds the dispatch lock empties, so handlers see messages in order and never re-entrantly
// (a handler that sends, and so makes progress, leaves what arrives meanwhile to the dispatch
// loop below it).
#pragma once

#include <atomic>
#include <mutex>
#include <vector>

#include "runtime/message_assembler.hpp"
#include "runtime/transport.hpp"

namespace rma {

class MessageRouter {
 public:
  MessageRouter(int rank, int size);

  // Installs (or replaces) the handler of `id`.
  void set_handler(uint16_t id, ActiveMessageHandler handler);
  // The header of a new message of `length` bytes to target, with the next sequence number
  // to target; its offset is 0 (the first fragment's).
  FragmentHeader begin_message(int target, uint16_t handler, size_t length);
  // Queues arrived fragments, then dispatches every message they complete unless another
  // thread does (or a handler of this thread's is running: the dispatch loop under it will).
  // A malformed fragment, a message without handler and a failing handler are reported on
  // stderr, not thrown: they must not stop the messages of others.
  void deliver(Fragments&& fragments);
  // Whether fragments wait for dispatch (then deliver({}) dispatches them).
  bool has_pending() const noexcept { return has_pending_.load(std::memory_order_acquire); }

 private:
  void dispatch(Fragments& batch);
  int rank_;
  std::mutex sequence_mutex_;
  std::vector<uint64_t> next_sequence_;  // per destination
  std::mutex pending_mutex_;
  Fragments pending_;
  std::atomic<bool> has_pending_{false};
  std::mutex delivery_mutex_;  // the dispatching thread's; guards what follows
  MessageAssembler assembler_;
  std::vector<ActiveMessageHandler> handlers_;
};

}  // namespace rma
