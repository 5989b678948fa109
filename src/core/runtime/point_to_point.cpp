// A communicator's point-to-point calls (send, irecv and their waits) and the two its
// collectives are made of: post (a message in the communicator's context) and wait_for (the
// message of a source and tag, whoever posted the receive).
#include <sched.h>

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "base/errors.hpp"
#include "base/wire.hpp"
#include "runtime/communicator.hpp"
#include "runtime/runtime.hpp"

namespace rma {

namespace {
std::string rank_or_any(int rank) {
  return rank == Communicator::kAnySource ? "any rank" : "rank " + std::to_string(rank);
}
}  // namespace

void Communicator::post(int dest, int32_t tag, std::span<const std::byte> data) {
  // [data][context u32][tag i32]: behind the data, the receiver takes them off without moving it.
  Bytes message;
  message.reserve(data.size() + 8);
  wire::append_bytes(message, data.data(), data.size());
  wire::append_bytes(message, &context_, 4);
  wire::append_bytes(message, &tag, 4);
  runtime_->transport().send(members_[dest], kCommunicatorMessage, message);
}

void Communicator::wait_until(const std::function<bool()>& done, std::span<const int> watch,
                              const std::function<std::string()>& what) {
  Transport& transport = runtime_->transport();
  // On shared memory the waiter sleeps on the bell every peer rings after posting to it, so a
  // wait gives its core to the ranks it waits for; asleep there, the transport's wait leaves
  // progress to the condition (what rang may be a message still in the inbox).
  Bell* bell = transport.incoming_bell();
  // (It polls for itself, from the first look: the progress engine leaves it the messages.)
  std::optional<Transport::Polling> polling;
  if (bell != nullptr) polling.emplace(transport);
  auto arrived = [&] {
    if (bell != nullptr) transport.progress();
    return done();
  };
  // More ranks on this host than cores: the rank this one waits for may be waiting for this
  // core. The transport's wait would spin first, keeping it out (a hop then costs a time
  // slice); give the core away at once instead, as the shared barrier does.
  if (bell != nullptr && static_cast<int>(runtime_->topology().host_ranks().size()) > usable_cpus()) {
    for (int turn = 0; turn < kCrowdedYields; ++turn) {
      if (arrived()) return;
      sched_yield();
    }
  }
  transport.wait_until(arrived, runtime_->deadline(), watch, what, bell, /*interruptible=*/true,
                       /*polls_itself=*/bell != nullptr);
}

Bytes Communicator::wait_for(int source, int32_t tag, const char* own, const CallName& call) {
  std::optional<Bytes> message;
  int world_source = members_[source];
  MessageMatcher& matcher = runtime_->matcher();
  if ((message = matcher.take(context_, world_source, tag))) return std::move(*message);
  std::vector<int> watch = tag >= 0 ? std::vector<int>{world_source} : watched();
  // (The condition may be asked again after it held: it takes the message once.)
  wait_until([&] { return message.has_value() || (message = matcher.take(context_, world_source, tag)).has_value(); },
             watch,
             [&] {
               return (call ? call() : std::string("comm.") + own) + " (waiting for rank " + std::to_string(source) +
                      (tag >= 0 ? ", tag " + std::to_string(tag) : std::string()) + ")";
             });
  return std::move(*message);
}

void Communicator::send(std::span<const std::byte> data, int dest, int tag) {
  runtime_->require_active("comm.send");
  check_rank(dest, "send", "dest");
  if (tag < 0 || tag > kMaxTag) {
    throw UsageError("rma: comm.send: tag " + std::to_string(tag) + " is outside [0, " + std::to_string(kMaxTag) + "]");
  }
  // Sent to a rank known dead, the message would be lost without a word (a shared-memory inbox
  // or the provider's queue still takes it).
  PeerStatus& peers = runtime_->transport().peers();
  if (peers.any_dead()) peers.check(members_[dest], runtime_->rank(), "comm.send to rank " + std::to_string(dest));
  try {
    post(dest, tag, data);
  } catch (const PeerError&) {
    // The target died while the send waited for room (its inbox full, the provider's queue):
    // the error names the user's call, not the transport's wait.
    peers.check(members_[dest], runtime_->rank(), "comm.send to rank " + std::to_string(dest));
    throw;
  }
}

void Communicator::check_receive(int source, int tag, const char* call) const {
  runtime_->require_active((std::string("comm.") + call).c_str());
  if (source != kAnySource) check_rank(source, call, "source");
  if (tag != kAnyTag && (tag < 0 || tag > kMaxTag)) {
    throw UsageError(std::string("rma: comm.") + call + ": tag " + std::to_string(tag) + " is outside [0, " +
                     std::to_string(kMaxTag) + "] (or rma.ANY_TAG)");
  }
}

int Communicator::rank_of_world(int world_rank) const {
  return static_cast<int>(std::find(members_.begin(), members_.end(), world_rank) - members_.begin());
}

Received Communicator::received(Message&& message) const {
  return {rank_of_world(message.source), message.tag, std::move(message.data)};
}

void Communicator::wait_filled(const MessageMatcher::Receive& receive, const char* own) {
  MessageMatcher& matcher = runtime_->matcher();
  if (matcher.filled(receive)) return;
  // A receive from any rank may be waiting for any member: every death ends it.
  std::vector<int> watch = receive.source == kAnySource ? watched() : std::vector<int>{receive.source};
  wait_until([&] { return matcher.filled(receive); }, watch,
             [&] {
               int source = receive.source == MessageMatcher::kAnySource ? kAnySource : rank_of_world(receive.source);
               return std::string("comm.") + own + " (waiting for " + rank_or_any(source) + ", " +
                      (receive.tag == MessageMatcher::kAnyUserTag ? std::string("any tag")
                                                                  : "tag " + std::to_string(receive.tag)) +
                      ")";
             });
}

std::shared_ptr<MessageMatcher::Receive> Communicator::post_receive(int source, int tag) {
  // The matcher speaks world ranks and its own wildcards.
  return runtime_->matcher().post(context_, source == kAnySource ? MessageMatcher::kAnySource : members_[source],
                                  tag == kAnyTag ? MessageMatcher::kAnyUserTag : tag);
}

std::shared_ptr<PendingReceive> Communicator::irecv(int source, int tag, const char* call) {
  check_receive(source, tag, call);
  const char* waits_as = std::string_view(call) == "irecv" ? "irecv request's wait" : call;
  return std::make_shared<PendingReceive>(shared_from_this(), waits_as, post_receive(source, tag));
}

PendingReceive::PendingReceive(std::shared_ptr<Communicator> comm, const char* call,
                               std::shared_ptr<MessageMatcher::Receive> receive)
    : comm_(std::move(comm)), call_(call), receive_(std::move(receive)) {}

PendingReceive::~PendingReceive() {
  if (!collected_) comm_->runtime().matcher().withdraw(receive_);
}

bool PendingReceive::test() {
  if (collected_) return true;
  comm_->runtime().transport().progress();
  return comm_->runtime().matcher().filled(*receive_);
}

bool PendingReceive::arrived() const { return collected_ || comm_->runtime().matcher().filled(*receive_); }

void PendingReceive::wait_arrived() {
  if (collected_)
    throw UsageError("rma: comm.irecv: this request's message was already received (wait() returns it once)");
  comm_->wait_filled(*receive_, call_);
}

Received PendingReceive::wait() {
  wait_arrived();
  collected_ = true;
  return comm_->received(std::move(*comm_->runtime().matcher().collect(*receive_)));
}

}  // namespace rma
