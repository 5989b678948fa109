// A communicator's point-to-point calls (send, irecv and their waits, synchronous sends, probes)
// and the two its collectives are made of: post (a message in the communicator's context) and
// wait_for (the message of a source and tag, whoever posted the receive). Also the transport's
// handler of these messages, which hands them to the matcher.
#include <sched.h>

#include <algorithm>
#include <cstring>
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

void deliver_communicator_message(Runtime& runtime, int source, std::vector<std::byte>&& payload) {
  if (payload.size() < 8) throw RmaError("rma: truncated communicator message");
  uint32_t context;
  int32_t tag;
  size_t data_bytes = payload.size() - 8;
  std::memcpy(&context, payload.data() + data_bytes, 4);
  std::memcpy(&tag, payload.data() + data_bytes + 4, 4);
  std::optional<uint64_t> synchronous;
  if (tag >= 0 && (tag & kSynchronousFlag) != 0) {
    if (data_bytes < 8) throw RmaError("rma: truncated synchronous communicator message");
    data_bytes -= 8;
    uint64_t id;
    std::memcpy(&id, payload.data() + data_bytes, 8);
    synchronous = id;
    tag &= ~kSynchronousFlag;
  }
  payload.resize(data_bytes);
  runtime.matcher().deliver(context, source, tag, std::move(payload), synchronous);
  if (synchronous) send_acknowledgements(runtime);
}

void send_acknowledgements(Runtime& runtime) {
  for (const MessageMatcher::Ack& ack : runtime.matcher().take_acks()) {
    Bytes message;
    wire::append_bytes(message, &ack.id, 8);
    wire::append_bytes(message, &ack.context, 4);
    wire::append_bytes(message, &kSynchronousAckTag, 4);
    try {
      runtime.transport().send(ack.source, kCommunicatorMessage, message);
    } catch (const PeerError&) {
      // The sender died: nobody waits for this acknowledgement any more.
    }
  }
}

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

void Communicator::send(std::span<const std::byte> data, int dest, int tag) { send_user(data, dest, tag, tag, "send"); }

void Communicator::send_user(std::span<const std::byte> data, int dest, int tag, int32_t wire_tag, const char* call) {
  std::string named = std::string("comm.") + call;
  runtime_->require_active(named.c_str());
  check_rank(dest, call, "dest");
  if (tag < 0 || tag > kMaxTag) {
    throw UsageError("rma: " + named + ": tag " + std::to_string(tag) + " is outside [0, " + std::to_string(kMaxTag) +
                     "]");
  }
  // Sent to a rank known dead, the message would be lost without a word (a shared-memory inbox
  // or the provider's queue still takes it).
  PeerStatus& peers = runtime_->transport().peers();
  if (peers.any_dead()) peers.check(members_[dest], runtime_->rank(), named + " to rank " + std::to_string(dest));
  try {
    post(dest, wire_tag, data);
  } catch (const PeerError&) {
    // The target died while the send waited for room (its inbox full, the provider's queue):
    // the error names the user's call, not the transport's wait.
    peers.check(members_[dest], runtime_->rank(), named + " to rank " + std::to_string(dest));
    throw;
  }
}

uint64_t Communicator::send_synchronous(std::span<const std::byte> data, int dest, int tag) {
  uint64_t id;
  {
    std::lock_guard lock(synchronous_mutex_);
    id = next_synchronous_++;
  }
  Bytes message;
  message.reserve(data.size() + 8);
  wire::append_bytes(message, data.data(), data.size());
  wire::append_bytes(message, &id, 8);
  send_user(message, dest, tag, tag | kSynchronousFlag, "ssend");
  return id;
}

bool Communicator::acknowledged(int dest, uint64_t id) {
  MessageMatcher& matcher = runtime_->matcher();
  std::lock_guard lock(synchronous_mutex_);
  while (std::optional<Bytes> ack = matcher.take(context_, members_[dest], kSynchronousAckTag)) {
    if (ack->size() != 8) throw RmaError("rma: malformed acknowledgement of a synchronous send");
    uint64_t got;
    std::memcpy(&got, ack->data(), 8);
    acknowledged_.insert(got);
  }
  return acknowledged_.erase(id) > 0;
}

bool Communicator::synchronous_matched(int dest, uint64_t id) {
  runtime_->transport().progress();
  return acknowledged(dest, id);
}

void Communicator::wait_synchronous(int dest, uint64_t id) {
  bool done = acknowledged(dest, id);
  if (done) return;
  std::vector<int> watch{members_[dest]};
  wait_until([&] { return done || (done = acknowledged(dest, id)); }, watch,
             [&] { return "comm.ssend (waiting for rank " + std::to_string(dest) + " to receive the message)"; });
}

int Communicator::matcher_source(int source) const {
  return source == kAnySource ? MessageMatcher::kAnySource : members_[source];
}

int32_t Communicator::matcher_tag(int tag) { return tag == kAnyTag ? MessageMatcher::kAnyUserTag : tag; }

std::optional<Communicator::Probed> Communicator::iprobe(int source, int tag) {
  check_receive(source, tag, "iprobe");
  runtime_->transport().progress();
  std::optional<MessageMatcher::Peek> seen =
      runtime_->matcher().peek(context_, matcher_source(source), matcher_tag(tag));
  if (!seen) return std::nullopt;
  return Probed{rank_of_world(seen->source), seen->tag, seen->bytes};
}

Communicator::Probed Communicator::probe(int source, int tag) {
  check_receive(source, tag, "probe");
  MessageMatcher& matcher = runtime_->matcher();
  std::optional<MessageMatcher::Peek> seen;
  std::vector<int> watch = source == kAnySource ? watched() : std::vector<int>{members_[source]};
  wait_until(
      [&] {
        return seen.has_value() ||
               (seen = matcher.peek(context_, matcher_source(source), matcher_tag(tag))).has_value();
      },
      watch, [&] { return "comm.probe (waiting for " + rank_or_any(source) + ")"; });
  return Probed{rank_of_world(seen->source), seen->tag, seen->bytes};
}

std::optional<Received> Communicator::improbe(int source, int tag) {
  check_receive(source, tag, "improbe");
  runtime_->transport().progress();
  std::optional<Message> message =
      runtime_->matcher().take_matching(context_, matcher_source(source), matcher_tag(tag));
  if (!message) return std::nullopt;
  send_acknowledgements(*runtime_);
  return received(std::move(*message));
}

Received Communicator::mprobe(int source, int tag) {
  check_receive(source, tag, "mprobe");
  MessageMatcher& matcher = runtime_->matcher();
  std::optional<Message> message;
  std::vector<int> watch = source == kAnySource ? watched() : std::vector<int>{members_[source]};
  wait_until(
      [&] {
        return message.has_value() ||
               (message = matcher.take_matching(context_, matcher_source(source), matcher_tag(tag))).has_value();
      },
      watch, [&] { return "comm.mprobe (waiting for " + rank_or_any(source) + ")"; });
  send_acknowledgements(*runtime_);
  return received(std::move(*message));
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
  auto receive = runtime_->matcher().post(context_, matcher_source(source), matcher_tag(tag));
  send_acknowledgements(*runtime_);  // (if it took a synchronous message)
  return receive;
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

bool PendingReceive::cancel() {
  if (collected_) return false;
  if (!comm_->runtime().matcher().cancel(receive_)) return false;
  collected_ = true;  // (nothing left to withdraw)
  return true;
}

Received PendingReceive::wait() {
  wait_arrived();
  collected_ = true;
  return comm_->received(std::move(*comm_->runtime().matcher().collect(*receive_)));
}

}  // namespace rma
