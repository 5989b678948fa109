// Active messages between the ranks of one host through their shared-memory inboxes
// (shm_inbox.hpp), past libfabric: this rank's inbox, the inboxes of the other ranks of its
// host, and their bells, which a sender rings so that a sleeping target wakes; and the barrier
// boards in those inboxes.
#pragma once

#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "base/topology.hpp"
#include "base/transport.hpp"
#include "host/barrier_board.hpp"
#include "host/shm_inbox.hpp"
#include "messages/message_assembler.hpp"
#include "messages/message_router.hpp"

namespace rma {

class InboxLink {
 public:
  // Creates this rank's inbox. `owner` is the transport it serves: its progress drives a
  // send that waits for room, for at most timeout_seconds; `router` numbers the messages.
  // Throws RmaError when the shared memory cannot be made.
  InboxLink(Transport& owner, MessageRouter& router, double timeout_seconds);
  // Removes this rank's inbox name from /dev/shm even while communicators still map its
  // barrier board (a process may end without dropping them).
  ~InboxLink();
  InboxLink(const InboxLink&) = delete;
  InboxLink& operator=(const InboxLink&) = delete;

  // What the ranks of this host open to reach this rank's inbox.
  const std::string& name() const { return inbox_->name(); }
  // Opens the inboxes of the other ranks of this host; names[r] is rank r's name(). A rank
  // whose inbox cannot be opened (another machine under the same host identity) is not
  // reached: the fabric carries its messages, and it cannot ring this rank's bell.
  void connect(const std::vector<std::string>& names, const Topology& topology);
  // Whether target's inbox is open (false for this rank itself).
  bool reaches(int target) const noexcept {
    return target >= 0 && target < static_cast<int>(peers_.size()) && peers_[target] != nullptr;
  }
  // Whether every other rank reaches this one, so rings its bell after anything it posts here.
  bool reached_by_everyone() const noexcept { return reached_by_everyone_; }

  // Copies one fragment (header, then payload of at most kFragmentPayload bytes) into
  // target's inbox, which must be reached. The first fragment of a message (`first`) takes its
  // sequence number from the router when it is written (MessageRouter::commit_first), into
  // header.sequence. While
  // target's ring is full it waits with the owner's progress (Transport::wait_until,
  // uninterruptible): PeerError if target dies, TimeoutError at the deadline. The caller
  // rings target's bell.
  void push(int target, FragmentHeader& header, MessageParts payload, bool first);
  // Wakes target if it sleeps on its bell; nothing for a rank not reached.
  void ring(int target) noexcept {
    if (reaches(target)) peers_[target]->bell().ring();
  }
  // Appends the fragments waiting in this rank's inbox to `arrived`; returns how many. One
  // thread at a time takes them: another that calls meanwhile gets 0.
  // Writes `frame` into target's inbox as it is (Transport::send_frame_as_is), waiting for room.
  void push_as_is(int target, std::span<const std::byte> frame);
  size_t drain(Fragments& arrived);
  Bell& bell() { return inbox_->bell(); }
  // The barrier board of `rank` (this rank's own too); null for a rank not reached.
  std::shared_ptr<BarrierBoard> board(int rank) const {
    return rank >= 0 && rank < static_cast<int>(boards_.size()) ? boards_[rank] : nullptr;
  }

 private:
  Transport& owner_;
  MessageRouter& router_;
  double timeout_seconds_;
  std::shared_ptr<ShmInbox> inbox_;                    // this rank's (and its bell)
  std::vector<std::shared_ptr<ShmInbox>> peers_;       // by rank; null: not reached
  std::vector<std::shared_ptr<BarrierBoard>> boards_;  // by rank, this rank's too; null: not reached
  std::unique_ptr<std::mutex[]> push_mutexes_;         // one producer per peer's ring
  std::mutex drain_mutex_;                             // one consumer of ours
  bool reached_by_everyone_ = false;
};

}  // namespace rma
