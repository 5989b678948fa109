// A communicator: an ordered set of ranks (members) with a context of its own, so messages of
// different communicators never match. Payloads are bytes; the Python layer pickles objects.
// Every blocking call makes progress while it waits, raises PeerError if a member dies and
// TimeoutError at the runtime's deadline. Its code: communicator.cpp (making communicators),
// point_to_point.cpp, collectives.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "elements/reduce.hpp"
#include "host/barrier_board.hpp"
#include "host/shared_barrier.hpp"
#include "host/shared_exchange.hpp"
#include "messages/message_matcher.hpp"

namespace rma {

class Runtime;

using Bytes = std::vector<std::byte>;
// The user's call a collective serves ("Window.allocate", "win.fence on rank 0 of window 3"),
// for its errors; built only when one is raised. Empty: the collective's own name ("comm.gather").
using CallName = std::function<std::string()>;

// A message a user's receive got: its source (a rank of the communicator) and tag.
struct Received {
  int source;
  int tag;
  Bytes data;
};

class Communicator;

// A synchronous send on the wire: its tag carries this bit (above every user tag) and its data
// ends with the send's id (8 bytes), which the receiver sends back when the message matches.
inline constexpr int32_t kSynchronousFlag = 1 << 30;
// The tag of those acknowledgements (taken by exact match, as the collectives' tags are).
inline constexpr int32_t kSynchronousAckTag = -8;
// The transport's handler of communicator messages: [data][context u32][tag i32] (Communicator::
// post) into the matcher; then sends the acknowledgements that matching made owed.
void deliver_communicator_message(Runtime& runtime, int source, std::vector<std::byte>&& payload);
// Sends the acknowledgements of synchronous messages that have matched a receive.
void send_acknowledgements(Runtime& runtime);

// A receive posted by irecv, until its message is collected. Dropping it unfinished withdraws
// it, so its message (if one came) goes to the next matching receive.
class PendingReceive {
 public:
  // call: what its wait is called in errors ("recv").
  PendingReceive(std::shared_ptr<Communicator> comm, const char* call,
                 std::shared_ptr<MessageMatcher::Receive> receive);
  ~PendingReceive();
  PendingReceive(const PendingReceive&) = delete;
  PendingReceive& operator=(const PendingReceive&) = delete;
  // Whether the message has come (then wait() returns at once). Makes progress.
  bool test();
  // Whether the progress made so far (the progress engine's, other calls') brought it: makes none.
  bool arrived() const;
  // Waits until the message has come, as recv does, without taking it: the caller may still
  // drop the receive, and with it give the message to the next matching receive.
  void wait_arrived();
  // The message, waiting for it as recv does. Once only.
  Received wait();
  // MPI_Cancel: withdraws the receive if no message has matched it yet (true; it then never
  // gets one), else false and the message stays to be collected.
  bool cancel();

 private:
  std::shared_ptr<Communicator> comm_;
  const char* call_;
  std::shared_ptr<MessageMatcher::Receive> receive_;
  bool collected_ = false;
};

class Communicator : public std::enable_shared_from_this<Communicator> {
 public:
  // Largest user tag; tags below 0 belong to the collectives.
  static constexpr int32_t kMaxTag = (1 << 30) - 1;
  // A receive's source or tag meaning "any" (the user's tags only).
  static constexpr int kAnySource = -1;
  static constexpr int kAnyTag = -1;

  // The runtime must be connected (its topology known). members: world ranks; rank: this
  // rank's index in members. barrier_slot: the slot of members[0]'s barrier board that this
  // communicator's barrier may use when its members share a host (host/barrier_board.hpp;
  // every member passes the same), or -1: its barrier goes through messages.
  Communicator(std::shared_ptr<Runtime> runtime, uint32_t context, std::vector<int> members, int rank,
               int barrier_slot = -1);
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const noexcept { return rank_; }
  int size() const noexcept { return static_cast<int>(members_.size()); }
  uint32_t context() const noexcept { return context_; }
  // World rank of each member, indexed by rank in this communicator.
  const std::vector<int>& members() const noexcept { return members_; }
  Runtime& runtime() const noexcept { return *runtime_; }
  // Whether every member runs on one host (so shared memory reaches them all).
  bool on_one_host() const noexcept { return on_one_host_; }
  // The ranks (in this communicator) of the members on this rank's host, ascending; this
  // rank among them.
  const std::vector<int>& host_ranks() const noexcept { return host_ranks_; }
  // Whether barrier() meets in shared memory (else through messages).
  bool barrier_in_shared_memory() const noexcept { return shared_barrier_ != nullptr; }
  // The slot of rank 0's barrier board it meets in (-1: it meets through messages).
  int barrier_slot() const noexcept { return barrier_slot_; }

  // Returns once the message is on its way (it does not wait for the matching recv).
  void send(std::span<const std::byte> data, int dest, int tag);
  // Posts a receive of the oldest message from source with tag, and returns at once: its
  // wait() returns the message. source may be kAnySource and tag kAnyTag. Receives are matched
  // in the order they were posted. call: the communicator call it serves, named in its
  // errors ("recv", "sendrecv"; a wait from "irecv" is "irecv request's wait").
  std::shared_ptr<PendingReceive> irecv(int source, int tag, const char* call = "irecv");
  // A synchronous send (MPI_Ssend): posts the message and returns its id at once; the send is
  // complete once synchronous_matched(dest, id) holds: a receive at dest has matched it.
  uint64_t send_synchronous(std::span<const std::byte> data, int dest, int tag);
  // Whether that receive has matched (makes progress). True once: the caller remembers it.
  bool synchronous_matched(int dest, uint64_t id);
  // Waits for it, as recv waits for a message.
  void wait_synchronous(int dest, uint64_t id);

  // What a probe learns of the message a receive of (source, tag) would take.
  struct Probed {
    int source;
    int tag;
    size_t bytes;
  };
  // MPI_Iprobe (makes progress, takes nothing) and MPI_Probe (waits for such a message).
  std::optional<Probed> iprobe(int source, int tag);
  Probed probe(int source, int tag);
  // MPI_Improbe and MPI_Mprobe: the message taken out, for the caller's own receive of it.
  std::optional<Received> improbe(int source, int tag);
  Received mprobe(int source, int tag);

  // The collectives; `call` names the call they serve in their errors.
  // In shared memory when every member shares this host, else through messages.
  void barrier(const CallName& call = {});
  Bytes bcast(Bytes data, int root, const CallName& call = {});
  // Root receives everyone's data in rank order; the others get an empty vector.
  std::vector<Bytes> gather(std::span<const std::byte> data, int root, const CallName& call = {});
  std::vector<Bytes> allgather(std::span<const std::byte> data, const CallName& call = {});
  // Members with the same color form a new communicator, ordered by (key, rank); a negative
  // color takes part but gets no communicator (nullptr). Collective.
  std::shared_ptr<Communicator> split(int color, int key, const CallName& call = {});
  // split() that also gathers `data` of every member into `gathered` (in this communicator's
  // rank order): a caller that needs both (a window's creation) pays for one collective.
  std::shared_ptr<Communicator> split(int color, int key, const CallName& call, std::span<const std::byte> data,
                                      std::vector<Bytes>& gathered);
  // A communicator of this rank alone (MPI's COMM_SELF), made without the others: its
  // context is one this rank never offered, and no other member can send in it.
  std::shared_ptr<Communicator> alone();
  // Rank i receives items[i] of root's list (items is read on root only).
  Bytes scatter(const std::vector<Bytes>& items, int root, const CallName& call = {});
  // Rank i receives items[i] of every rank, in rank order.
  std::vector<Bytes> alltoall(const std::vector<Bytes>& items, const CallName& call = {});
  // Element-wise reduction of every rank's elements (count of `type`, the same count on every
  // rank): the result on root (empty elsewhere), or on every rank for allreduce. The order of
  // combination is fixed by the rank count, so every run (and, for allreduce, every rank)
  // gets the same floating-point result.
  Bytes reduce(std::span<const std::byte> data, ElementType type, ReduceOp op, int root, const CallName& call = {});
  // allreduce's result goes into `out` (data.size() bytes; it may be data itself).
  void allreduce(std::span<const std::byte> data, std::span<std::byte> out, ElementType type, ReduceOp op,
                 const CallName& call = {});

 private:
  void check_rank(int rank, const char* call, const char* role) const;
  void post(int dest, int32_t tag, std::span<const std::byte> data);
  // A user's send: checks dest and tag (call: "send", "ssend"), then posts with wire_tag.
  void send_user(std::span<const std::byte> data, int dest, int tag, int32_t wire_tag, const char* call);
  friend class PendingReceive;
  void check_receive(int source, int tag, const char* call) const;
  // own: the communicator call waiting ("recv"), named in errors unless `call` names another.
  Bytes wait_for(int source, int32_t tag, const char* own, const CallName& call = {});
  // Yields of a wait before the transport's, on a host with more ranks than cores.
  static constexpr int kCrowdedYields = 100;  // (as SharedBarrier::kYields)
  // The transport's wait_until with the runtime's deadline, asleep on the incoming bell where
  // there is one. done() must keep holding once it held (the bell's sleep asks it too).
  void wait_until(const std::function<bool()>& done, std::span<const int> watch,
                  const std::function<std::string()>& what);
  // Waits until a posted receive is filled; on an error the receive is left for the caller.
  void wait_filled(const MessageMatcher::Receive& receive, const char* own);
  int rank_of_world(int world_rank) const;
  void check_reducible(ReduceOp op, ElementType type, const CallName& call) const;
  // Passes the barrier in shared memory; its errors name `call`, else comm.<own>.
  void pass_shared_barrier(const CallName& call, const char* own);
  // allreduce in shared memory (host/shared_exchange.hpp), where every member shares this
  // host: true with the result in `out`, false when it could not be done there (every rank
  // then goes on through messages alike). UsageError naming `call`, on every rank, if the members
  // passed different sizes.
  bool allreduce_shared(std::span<const std::byte> data, std::span<std::byte> out, ElementType type, ReduceOp op,
                        const CallName& call);
  // Waits for `source`'s part of a reduction (tag) and combines it into `partial`; UsageError
  // naming `call` unless it has as many bytes as ours.
  void combine_from(int source, int32_t tag, Bytes& partial, ElementType type, ReduceOp op, const char* own,
                    const CallName& call);
  // Posts a user's receive (source and tag as recv takes them) in the matcher.
  std::shared_ptr<MessageMatcher::Receive> post_receive(int source, int tag);
  Received received(Message&& message) const;
  // The matcher's wildcards and world ranks for a user's (source, tag).
  int matcher_source(int source) const;
  static int32_t matcher_tag(int tag);
  // Takes the acknowledgements from dest that have come into acknowledged_; whether id's has.
  bool acknowledged(int dest, uint64_t id);
  std::vector<int> watched() const { return members_; }

  std::shared_ptr<Runtime> runtime_;
  uint32_t context_;
  std::vector<int> members_;
  int rank_;
  bool on_one_host_;
  std::vector<int> host_ranks_;
  // The barrier in shared memory, when every member shares this host; null: through messages.
  int barrier_slot_;
  std::shared_ptr<BarrierBoard> barrier_board_;               // members[0]'s, holding the slot
  std::vector<std::shared_ptr<BarrierBoard>> member_boards_;  // mapped while their bells are used
  std::unique_ptr<SharedBarrier> shared_barrier_;
  std::unique_ptr<SharedExchange> shared_exchange_;  // with shared_barrier_
  // The round a barrier through messages was waiting in when it was interrupted (-1: none): the
  // next barrier resumes there, as the shared barrier does.
  int32_t interrupted_barrier_round_ = -1;
  // Synchronous sends: the next id, and the ids acknowledged but not yet asked about.
  std::mutex synchronous_mutex_;
  uint64_t next_synchronous_ = 0;
  std::set<uint64_t> acknowledged_;
};

// The synchronous-send bit must lie above every user tag, or a user's tag would read as one.
static_assert(kSynchronousFlag > Communicator::kMaxTag);

}  // namespace rma
