// Matching of communicator messages to receives, as MPI matches them: per (communicator
// context, source, tag), in order. A receive posted by the user (recv, irecv) waits in the
// posted list until a message matches it; a message that no posted receive wants waits in the
// unexpected queue until a receive takes it. Among several candidates the oldest wins on both
// sides, so messages of one source and tag are received in the order they were sent, and
// receives in the order they were posted (irecv, then recv: the irecv gets the first message).
// A user's receive may name any source (kAnySource) or any user tag (kAnyUserTag, the tags
// >= 0); the collectives' own messages (negative tags) are taken by exact match only.
//
// A synchronous send (MPI_Ssend) completes only once its message has matched a receive: such a
// message carries the sender's id for it, and the matcher lists an acknowledgement to send back
// when the message matches (take_acks(); the communicator sends them, the matcher has no
// transport). A probe looks at the message a receive would take without taking it (peek), a
// matched probe takes it out for a later receive of its own (take_matching).
#pragma once

#include <cstdint>
#include <deque>
#include <limits>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <tuple>
#include <vector>

namespace rma {

struct Message {
  int source;  // world rank
  int32_t tag;
  std::vector<std::byte> data;
  uint64_t arrival;                     // order of arrival at this rank, for "the oldest" among several queues
  std::optional<uint64_t> synchronous;  // a synchronous send's id, acknowledged when it matches
};

class MessageMatcher {
 public:
  static constexpr int kAnySource = -1;
  static constexpr int32_t kAnyUserTag = std::numeric_limits<int32_t>::min();

  // A receive the user posted. Filled by post() or deliver(); collected once.
  struct Receive {
    uint32_t context;
    int source;  // world rank or kAnySource
    int32_t tag;
    std::optional<Message> message;
  };

  // An acknowledgement owed to the sender of a synchronous message that matched.
  struct Ack {
    uint32_t context;
    int source;  // world rank: where it goes
    uint64_t id;
  };
  // What a probe sees of the message a receive would take.
  struct Peek {
    int source;  // world rank
    int32_t tag;
    size_t bytes;
  };

  // synchronous: the id of a synchronous send (then matching it owes an acknowledgement).
  void deliver(uint32_t context, int source, int32_t tag, std::vector<std::byte>&& data,
               std::optional<uint64_t> synchronous = std::nullopt);
  // The oldest unexpected message matching exactly, if any (the collectives' messages).
  std::optional<std::vector<std::byte>> take(uint32_t context, int source, int32_t tag);

  // Posts a user's receive; it takes the oldest matching unexpected message at once if any.
  std::shared_ptr<Receive> post(uint32_t context, int source, int32_t tag);
  bool filled(const Receive& receive);
  // The message of a filled receive (moved out); nullopt if not filled yet.
  std::optional<Message> collect(Receive& receive);
  // Withdraws a receive nobody will collect (an error ended its wait, its request was
  // dropped): a message it already holds goes back to the unexpected queue, in arrival order,
  // for the next receive that matches it. Nothing is lost.
  void withdraw(const std::shared_ptr<Receive>& receive);
  // Withdraws a receive only if no message has matched it yet (MPI_Cancel of a receive): true
  // if it was withdrawn, false if it holds its message (it must then be collected).
  bool cancel(const std::shared_ptr<Receive>& receive);

  // The oldest unexpected message a receive of (source, tag) would take, left in place.
  std::optional<Peek> peek(uint32_t context, int source, int32_t tag);
  // That message taken out (a matched probe): no later receive can get it.
  std::optional<Message> take_matching(uint32_t context, int source, int32_t tag);
  // The acknowledgements owed since the last call, in the order the messages matched.
  std::vector<Ack> take_acks();

 private:
  using Key = std::tuple<uint32_t, int, int32_t>;  // context, source, tag
  static bool matches(const Receive& receive, int source, int32_t tag);
  void queue_unexpected(Message&& message, uint32_t context);
  using Queues = std::map<Key, std::deque<Message>>;
  // The queue whose front is the oldest unexpected message matching (source, tag); end() if none.
  Queues::iterator oldest(uint32_t context, int source, int32_t tag);
  // Takes the front of `queue` (from oldest()) out as matched.
  Message pop_matched(Queues::iterator queue, uint32_t context);
  // Notes the acknowledgement a message owes, now that it has matched.
  void matched(const Message& message, uint32_t context);

  std::mutex mutex_;
  uint64_t arrivals_ = 0;
  Queues unexpected_;
  std::vector<Ack> acks_;
  std::list<std::shared_ptr<Receive>> posted_;  // in posting order, unfilled ones only
};

}  // namespace rma
