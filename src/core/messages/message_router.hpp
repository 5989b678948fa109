// Routing of active messages, whatever carried their fragments (the fabric, an inbox, or
// nothing for a message to oneself). At the sender: the sequence number of each message, per
// destination. At the receiver: the handler table, and the dispatch of arrived fragments,
// reassembled and in each source's order (message_assembler.hpp), to their handlers.
//
// Dispatch is one thread at a time: arrived fragments wait in a queue that whichever thread
// holds the dispatch lock empties, so handlers see messages in order and never re-entrantly
// (a handler that sends, and so makes progress, leaves what arrives meanwhile to the dispatch
// loop below it).
//
// Numbering: the receiver hands a source's messages on strictly in sequence, so a number that
// is taken and never arrives stalls every later message from that sender, silently. A message
// therefore takes its number only at the moment its first fragment is committed (taken by the
// provider, written into the target's inbox): a send that fails before that (no room until
// the deadline, a dead peer, a provider error) takes none and leaves no gap. A send that fails
// after (a later fragment, or a fragment whose completion reports an error) leaves a message
// the receiver can never complete; the route is then broken, and every later send to that
// rank throws PeerError saying why, instead of queueing behind it.
//
// Trust: the transports hand on only fragments whose header names the rank they came from (the
// provider's source address, an inbox's ring), and the assembler and the handlers read
// every length, offset and id with checks (MalformedMessage). A rank that sends a malformed
// fragment or message is no longer trusted: what it sends after is dropped, and PeerStatus
// counts it as dead with the reason, so that calls waiting for it raise PeerError instead of
// hanging on a message stream that lost its order.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "base/transport.hpp"
#include "messages/message_assembler.hpp"

namespace rma {

class MessageRouter {
 public:
  MessageRouter(int rank, int size, PeerStatus& peers);

  // Installs (or replaces) the handler of `id`.
  void set_handler(uint16_t id, ActiveMessageHandler handler);
  // The header of a message of `length` bytes from this rank to handler; its sequence number
  // is set by commit_first.
  FragmentHeader header(uint16_t handler, size_t length) const;
  // Sets header.sequence to target's next number and calls commit(), which tries to hand the
  // message's first fragment on and says whether it was taken; the number is used up only if
  // so. Holds target's numbering lock meanwhile (commit takes no lock but those its caller
  // holds around this call). Returns what commit returned. Throws PeerError if the route to
  // target is broken, and what commit throws.
  bool commit_first(int target, FragmentHeader& header, const std::function<bool()>& commit);
  // A message to target failed after some of it was committed: breaks the route (see above).
  // `why` says what failed; the first reason stays.
  void break_route(int target, const std::string& why);
  // Queues arrived fragments, then dispatches every message they complete unless another
  // thread does (or a handler of this thread's is running: the dispatch loop under it will).
  // A malformed fragment or message (MalformedMessage from the assembler or a handler, or a
  // message for a handler that does not exist) makes its source untrusted (reject); a handler
  // failing otherwise is reported on stderr. Nothing is thrown: one rank's messages must not
  // stop the others'.
  void deliver(Fragments&& fragments);
  // Whether fragments wait for dispatch (then deliver({}) dispatches them).
  bool has_pending() const noexcept { return has_pending_.load(std::memory_order_acquire); }
  // `source` broke the wire's rules (`why`, after "it sent"): says so once on stderr, drops all
  // it sends from now on, and marks it misbehaving in PeerStatus. Any thread.
  void reject(int source, const std::string& why);
  // Whether fragments from `source` are still taken.
  bool trusts(int source) const noexcept;
  // A fragment as it arrived (its header, then its payload) from rank `source`, as the transport
  // knows it (the provider's source address, an inbox's ring; -1: it cannot tell, and the
  // header is believed): appended to `arrived` when it holds a header that names `source`;
  // else `source` is rejected. The one check of a fragment's sender, whatever carried it.
  void admit(int source, std::span<const std::byte> fragment, Fragments& arrived);

 private:
  struct Route {  // to one destination
    std::mutex mutex;
    uint64_t next_sequence = 0;
    std::string broken;  // why messages to it can no longer be delivered; empty while they can
  };
  void dispatch(Fragments& batch);
  int rank_;
  int size_;
  PeerStatus& peers_;
  std::unique_ptr<Route[]> routes_;
  std::unique_ptr<std::atomic<bool>[]> rejected_;  // per source
  std::mutex pending_mutex_;
  Fragments pending_;
  std::atomic<bool> has_pending_{false};
  std::mutex delivery_mutex_;  // the dispatching thread's; guards what follows
  MessageAssembler assembler_;
  std::vector<ActiveMessageHandler> handlers_;
};

}  // namespace rma
