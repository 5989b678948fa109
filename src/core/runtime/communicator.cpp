#include "runtime/communicator.hpp"

#include <sched.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "base/errors.hpp"
#include "host/peer_read_allreduce.hpp"
#include "runtime/runtime.hpp"

namespace rma {

namespace {
// Internal tags of the collectives; a collective's messages never match a user's recv.
constexpr int32_t kBarrierTag = -1000;  // minus the round
constexpr int32_t kBcastTag = -2;
constexpr int32_t kGatherTag = -3;
constexpr int32_t kScatterTag = -4;
constexpr int32_t kAlltoallTag = -5;
constexpr int32_t kReduceTag = -6;
constexpr int32_t kAllreduceTag = -7;

std::string rank_or_any(int rank) {
  return rank == Communicator::kAnySource ? "any rank" : "rank " + std::to_string(rank);
}

void append(Bytes& out, const void* data, size_t length) {
  auto bytes = static_cast<const std::byte*>(data);
  out.insert(out.end(), bytes, bytes + length);
}

// [count u64][length u64 ...][data ...]
Bytes pack_list(const std::vector<Bytes>& items) {
  Bytes out;
  uint64_t count = items.size();
  append(out, &count, 8);
  for (const Bytes& item : items) {
    uint64_t length = item.size();
    append(out, &length, 8);
  }
  for (const Bytes& item : items) append(out, item.data(), item.size());
  return out;
}

// The items of a pack_list, where they lie in `packed`.
std::vector<std::span<const std::byte>> list_items(std::span<const std::byte> packed) {
  auto fail = [] { return RmaError("rma: malformed collective message"); };
  if (packed.size() < 8) throw fail();
  uint64_t count;
  std::memcpy(&count, packed.data(), 8);
  if (count > (packed.size() - 8) / 8) throw fail();
  std::vector<std::span<const std::byte>> items(count);
  size_t offset = 8 + 8 * count;
  for (uint64_t i = 0; i < count; ++i) {
    uint64_t length;
    std::memcpy(&length, packed.data() + 8 + 8 * i, 8);
    if (length > packed.size() - offset) throw fail();
    items[i] = packed.subspan(offset, length);
    offset += length;
  }
  return items;
}

std::vector<Bytes> unpack_list(const Bytes& packed) {
  std::vector<Bytes> items;
  for (auto item : list_items(packed)) items.emplace_back(item.begin(), item.end());
  return items;
}
}  // namespace

Communicator::Communicator(std::shared_ptr<Runtime> runtime, uint32_t context, std::vector<int> members, int rank,
                           int barrier_slot)
    : runtime_(std::move(runtime)),
      context_(context),
      members_(std::move(members)),
      rank_(rank),
      barrier_slot_(barrier_slot) {
  // Learned once: the topology is fixed when the runtime connects.
  const Topology& topology = runtime_->topology();
  on_one_host_ = topology.one_host(members_);
  for (int i = 0; i < size(); ++i) {
    if (topology.same_host(members_[i], members_[rank_])) host_ranks_.push_back(i);
  }
  if (barrier_slot_ < 0) return;
  Transport& transport = runtime_->transport();
  barrier_board_ = transport.barrier_board(members_[0]);
  bool shared = on_one_host_ && size() > 1 && barrier_board_ != nullptr;
  for (int i = 0; shared && i < size(); ++i) {
    member_boards_.push_back(transport.barrier_board(members_[i]));
    shared = member_boards_.back() != nullptr;
  }
  if (!shared) {
    // (A member whose board this rank cannot map is one whose inbox it cannot open either: a
    // host's ranks map each other's inboxes or none, so the members agree on this.)
    member_boards_.clear();
    if (rank_ == 0 && barrier_board_) barrier_board_->give_back(barrier_slot_);
    barrier_board_ = nullptr;
    barrier_slot_ = -1;
    return;
  }
  std::vector<std::atomic<uint32_t>*> words;
  std::vector<Bell*> bells;
  for (int i = 0; i < size(); ++i) {
    words.push_back(barrier_board_->word(barrier_slot_, i));
    bells.push_back(&member_boards_[i]->bell());
  }
  shared_barrier_ = std::make_unique<SharedBarrier>(std::move(words), std::move(bells), rank_);
  std::vector<std::byte*> cells;
  for (int i = 0; i < size(); ++i) cells.push_back(barrier_board_->cells(barrier_slot_, i));
  shared_exchange_ = std::make_unique<SharedExchange>(*shared_barrier_, std::move(cells), rank_);
}

Communicator::~Communicator() {
  // The world's slot stays the world's; another goes back to its owner, rank 0.
  if (rank_ == 0 && barrier_board_ && barrier_slot_ != BarrierBoard::kWorldSlot && runtime_->active()) {
    barrier_board_->release(barrier_slot_, size());
  }
}

void Communicator::check_rank(int rank, const char* call, const char* role) const {
  if (rank < 0 || rank >= size()) {
    throw UsageError(std::string("rma: comm.") + call + ": " + role + " " + std::to_string(rank) +
                     " is not a rank of this communicator (size " + std::to_string(size()) + ")");
  }
}

void Communicator::post(int dest, int32_t tag, std::span<const std::byte> data) {
  // [data][context u32][tag i32]: behind the data, the receiver takes them off without moving it.
  Bytes message;
  message.reserve(data.size() + 8);
  append(message, data.data(), data.size());
  append(message, &context_, 4);
  append(message, &tag, 4);
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

void Communicator::pass_shared_barrier(const CallName& call, const char* own) {
  shared_barrier_->pass(runtime_->transport(), runtime_->deadline(), members_, [&](const std::vector<int>& missing) {
    std::string ranks;
    for (int rank : missing) ranks += (ranks.empty() ? "" : ", ") + std::to_string(rank);
    return (call ? call() : std::string("comm.") + own) + " (waiting for rank" + (missing.size() == 1 ? " " : "s ") +
           ranks + ")";
  });
}

void Communicator::barrier(const CallName& call) {
  runtime_->require_active("comm.barrier");
  if (shared_barrier_) {
    pass_shared_barrier(call, "barrier");
    return;
  }
  // Dissemination: in round k every rank signals rank + 2^k and hears from rank - 2^k. A
  // barrier interrupted in round k resumes there: its earlier rounds are done, and its signal
  // of round k was sent (sent twice, it would let that rank through its next barrier early).
  int p = size();
  int32_t resume = std::exchange(interrupted_barrier_round_, -1);
  int32_t round = 0;
  for (int distance = 1; distance < p; distance *= 2, ++round) {
    if (round < resume) continue;
    if (round != resume) post((rank_ + distance) % p, kBarrierTag - round, {});
    interrupted_barrier_round_ = round;
    wait_for((rank_ - distance + p) % p, kBarrierTag - round, "barrier", call);
    interrupted_barrier_round_ = -1;
  }
}

Bytes Communicator::bcast(Bytes data, int root, const CallName& call) {
  runtime_->require_active("comm.bcast");
  check_rank(root, "bcast", "root");
  // Binomial tree rooted at root, in ranks relative to it. (Through messages even on one host:
  // the root of a small bcast returns as soon as its messages are on their way, where one
  // through shared memory would wait for every rank.)
  int p = size();
  int relative = (rank_ - root + p) % p;
  int mask = 1;
  while (mask < p) {
    if (relative & mask) {
      data = wait_for((relative - mask + root) % p, kBcastTag, "bcast", call);
      break;
    }
    mask <<= 1;
  }
  for (mask >>= 1; mask > 0; mask >>= 1) {
    if (relative + mask < p) post((relative + mask + root) % p, kBcastTag, data);
  }
  return data;
}

std::vector<Bytes> Communicator::gather(std::span<const std::byte> data, int root, const CallName& call) {
  runtime_->require_active("comm.gather");
  check_rank(root, "gather", "root");
  // (Through messages even on one host, as bcast: the other ranks need not wait for root.)
  std::vector<Bytes> items;
  if (rank_ != root) {
    post(root, kGatherTag, data);
    return items;
  }
  items.resize(size());
  for (int source = 0; source < size(); ++source) {
    if (source == rank_) {
      items[source].assign(data.begin(), data.end());
    } else {
      items[source] = wait_for(source, kGatherTag, "gather", call);
    }
  }
  return items;
}

std::vector<Bytes> Communicator::allgather(std::span<const std::byte> data, const CallName& call) {
  runtime_->require_active("comm.allgather");
  CallName named = call ? call : [] { return std::string("comm.allgather"); };
  if (shared_exchange_) {
    auto all = shared_exchange_->exchange(data, [&] { pass_shared_barrier(named, "allgather"); });
    if (SharedExchange::all_fit(all)) {
      std::vector<Bytes> items;
      for (const auto& each : all) items.emplace_back(each.data, each.data + each.size);
      return items;
    }
  }
  std::vector<Bytes> items = gather(data, 0, named);
  Bytes packed = rank_ == 0 ? pack_list(items) : Bytes{};
  return unpack_list(bcast(std::move(packed), 0, named));
}

Bytes Communicator::scatter(const std::vector<Bytes>& items, int root, const CallName& call) {
  runtime_->require_active("comm.scatter");
  check_rank(root, "scatter", "root");
  if (rank_ != root) return wait_for(root, kScatterTag, "scatter", call);
  if (items.size() != static_cast<size_t>(size())) {
    throw UsageError("rma: comm.scatter: root " + std::to_string(root) + " passed " + std::to_string(items.size()) +
                     " items for " + std::to_string(size()) + " ranks");
  }
  for (int dest = 0; dest < size(); ++dest) {
    if (dest != rank_) post(dest, kScatterTag, items[dest]);
  }
  return items[rank_];
}

std::vector<Bytes> Communicator::alltoall(const std::vector<Bytes>& items, const CallName& call) {
  runtime_->require_active("comm.alltoall");
  if (items.size() != static_cast<size_t>(size())) {
    throw UsageError("rma: comm.alltoall: rank " + std::to_string(rank_) + " passed " + std::to_string(items.size()) +
                     " items for " + std::to_string(size()) + " ranks");
  }
  int p = size();
  if (shared_exchange_) {
    // Every rank waits for every other anyway: all parts through the cells, one barrier.
    CallName named = call ? call : [] { return std::string("comm.alltoall"); };
    auto all = shared_exchange_->exchange(pack_list(items), [&] { pass_shared_barrier(named, "alltoall"); });
    if (SharedExchange::all_fit(all)) {
      std::vector<Bytes> result(p);
      for (int source = 0; source < p; ++source) {
        auto theirs = list_items({all[source].data, all[source].size});
        if (theirs.size() != static_cast<size_t>(p)) throw RmaError("rma: malformed collective message");
        result[source].assign(theirs[rank_].begin(), theirs[rank_].end());
      }
      return result;
    }
  }
  // Sends never wait for their receive, so every rank posts all, then collects all; rank
  // rank+k first, so that not every rank sends to rank 0 at once.
  for (int k = 1; k < p; ++k) post((rank_ + k) % p, kAlltoallTag, items[(rank_ + k) % p]);
  std::vector<Bytes> result(p);
  result[rank_] = items[rank_];
  for (int k = 1; k < p; ++k) {
    int source = (rank_ - k + p) % p;
    result[source] = wait_for(source, kAlltoallTag, "alltoall", call);
  }
  return result;
}

void Communicator::check_reducible(ReduceOp op, ElementType type, const CallName& call) const {
  if (!op_fits(op, type) || op == ReduceOp::Replace || op == ReduceOp::NoOp || element_size(type) == 0) {
    throw UsageError("rma: " + call() + ": " + describe(op) + " does not reduce " + describe(type) + " elements");
  }
}

void Communicator::combine_from(int source, int32_t tag, Bytes& partial, ElementType type, ReduceOp op, const char* own,
                                const CallName& call) {
  Bytes incoming = wait_for(source, tag, own, call);
  size_t element_bytes = element_size(type);
  if (incoming.size() != partial.size()) {
    throw UsageError("rma: " + call() + ": rank " + std::to_string(rank_) + " reduces " +
                     std::to_string(partial.size() / element_bytes) + " elements but rank " + std::to_string(source) +
                     " sent " + std::to_string(incoming.size() / element_bytes) +
                     " (its own or combined with others'): every rank must pass the same number of elements");
  }
  apply_reduce_plain(op, type, element_bytes, partial.data(), incoming.data(), nullptr, partial.size() / element_bytes);
}

bool Communicator::allreduce_shared(std::span<const std::byte> data, std::span<std::byte> out, ElementType type,
                                    ReduceOp op, const CallName& call) {
  auto pass = [&] { pass_shared_barrier(call, "allreduce"); };
  // Where this rank's arrays are, in case the data is too large for the cells.
  PeerReadNote note = peer_read_note(data, out);
  auto all = shared_exchange_->exchange(data, pass, {reinterpret_cast<const std::byte*>(&note), sizeof note});
  size_t element_bytes = element_size(type);
  for (int rank = 0; rank < size(); ++rank) {
    if (all[rank].size != data.size()) {
      throw UsageError("rma: " + call() + ": rank " + std::to_string(rank_) + " reduces " +
                       std::to_string(data.size() / element_bytes) + " elements but rank " + std::to_string(rank) +
                       " passed " + std::to_string(all[rank].size / element_bytes) +
                       ": every rank must pass the same number of elements");
    }
  }
  if (!SharedExchange::all_fit(all)) {
    // (Every rank decides alike.)
    return allreduce_by_reading(data, out, type, op, all, rank_, *shared_exchange_, pass);
  }
  // In rank order on every rank: every rank gets the same bits. (Out may be data: the cells
  // hold a copy.)
  std::memcpy(out.data(), all[0].data, all[0].size);
  for (int rank = 1; rank < size(); ++rank) {
    apply_reduce_plain(op, type, element_bytes, out.data(), all[rank].data, nullptr, out.size() / element_bytes);
  }
  return true;
}

Bytes Communicator::reduce(std::span<const std::byte> data, ElementType type, ReduceOp op, int root,
                           const CallName& call) {
  runtime_->require_active("comm.reduce");
  check_rank(root, "reduce", "root");
  CallName named = call ? call : [] { return std::string("comm.reduce"); };
  check_reducible(op, type, named);
  // Binomial tree towards root, in ranks relative to it: each rank combines its children's
  // partial results into its own, then sends that to its parent.
  int p = size();
  int relative = (rank_ - root + p) % p;
  Bytes partial(data.begin(), data.end());
  for (int mask = 1; mask < p; mask <<= 1) {
    if (relative & mask) {
      post((relative - mask + root) % p, kReduceTag, partial);
      return {};
    }
    if (relative + mask < p) {
      int child = (relative + mask + root) % p;
      combine_from(child, kReduceTag, partial, type, op, "reduce", named);
    }
  }
  return partial;
}

void Communicator::allreduce(std::span<const std::byte> data, std::span<std::byte> out, ElementType type, ReduceOp op,
                             const CallName& call) {
  runtime_->require_active("comm.allreduce");
  CallName named = call ? call : [] { return std::string("comm.allreduce"); };
  check_reducible(op, type, named);
  if (out.size() != data.size()) throw UsageError("rma: " + named() + ": the result's size differs from the data's");
  if (shared_exchange_ && allreduce_shared(data, out, type, op, named)) return;
  Bytes partial(data.begin(), data.end());
  auto combine = [&](int source) { combine_from(source, kAllreduceTag, partial, type, op, "allreduce", named); };
  // Recursive doubling: in step k each rank swaps its partial result with the rank 2^k away
  // and combines, so everyone holds the whole result after log2(p) exchanges (half the steps of
  // a reduce and a bcast, and no rank idles). Both sides of an exchange combine the same two
  // values, and IEEE addition and multiplication commute, so every rank ends with the same bits.
  // With p not a power of two, the first 2 * extra ranks pair up first (even into odd), and
  // the even ones get the result back at the end.
  int p = size();
  int power = 1;
  while (power * 2 <= p) power *= 2;
  int extra = p - power;
  int virtual_rank;
  if (rank_ < 2 * extra) {
    if (rank_ % 2 == 0) {
      post(rank_ + 1, kAllreduceTag, partial);
      virtual_rank = -1;
    } else {
      combine(rank_ - 1);
      virtual_rank = rank_ / 2;
    }
  } else {
    virtual_rank = rank_ - extra;
  }
  if (virtual_rank >= 0) {
    for (int mask = 1; mask < power; mask <<= 1) {
      int partner_virtual = virtual_rank ^ mask;
      int partner = partner_virtual < extra ? partner_virtual * 2 + 1 : partner_virtual + extra;
      post(partner, kAllreduceTag, partial);
      combine(partner);
    }
  }
  if (rank_ < 2 * extra) {
    if (rank_ % 2 == 1) {
      post(rank_ - 1, kAllreduceTag, partial);
    } else {
      partial = wait_for(rank_ + 1, kAllreduceTag, "allreduce", named);
    }
  }
  // A stray message of another size must not write past the result.
  if (partial.size() != out.size()) {
    throw UsageError("rma: " + named() + ": rank " + std::to_string(rank_) + " passed " + std::to_string(out.size()) +
                     " bytes but the reduction holds " + std::to_string(partial.size()) +
                     ": every rank must pass the same dtype and size");
  }
  if (!out.empty()) std::memcpy(out.data(), partial.data(), out.size());  // (an empty vector's data may be null)
}

std::shared_ptr<Communicator> Communicator::split(int color, int key, const CallName& call) {
  std::vector<Bytes> unused;
  return split(color, key, call, {}, unused);
}

std::shared_ptr<Communicator> Communicator::split(int color, int key, const CallName& call,
                                                  std::span<const std::byte> data, std::vector<Bytes>& gathered) {
  runtime_->require_active("comm.split");
  struct Entry {
    int32_t color, key;
    uint32_t next_context;
    int32_t barrier_slot;  // offered from this rank's board, for a communicator it would be rank 0 of
  };
  // Every member offers a slot of its barrier board; the new communicator's rank 0 keeps its
  // own, the others give theirs back.
  std::shared_ptr<BarrierBoard> board = runtime_->transport().barrier_board(runtime_->rank());
  Entry mine{color, key, runtime_->next_context(), board ? board->offer() : -1};
  auto give_back = [&] {
    if (board) board->give_back(mine.barrier_slot);
  };
  std::vector<Bytes> all;
  try {
    Bytes entry(reinterpret_cast<const std::byte*>(&mine), reinterpret_cast<const std::byte*>(&mine) + sizeof mine);
    entry.insert(entry.end(), data.begin(), data.end());
    all = allgather(entry, call ? call : [] { return std::string("comm.split"); });
  } catch (...) {
    give_back();
    throw;
  }
  // Every member of this communicator agrees on one fresh context: larger than any that one of
  // them has used. Disjoint colors share it safely, as they never exchange messages in it.
  uint32_t context = 0;
  std::vector<std::pair<std::pair<int32_t, int>, int>> chosen;  // ((key, old rank), world rank)
  std::vector<int32_t> offered(size());
  gathered.clear();
  for (int i = 0; i < size(); ++i) {
    Entry entry;
    std::memcpy(&entry, all[i].data(), sizeof entry);
    gathered.emplace_back(all[i].begin() + sizeof entry, all[i].end());
    context = std::max(context, entry.next_context);
    offered[i] = entry.barrier_slot;
    if (color >= 0 && entry.color == color) chosen.push_back({{entry.key, i}, members_[i]});
  }
  runtime_->context_taken(context);
  std::sort(chosen.begin(), chosen.end());
  int new_root = chosen.empty() ? -1 : chosen.front().first.second;  // in this communicator
  if (new_root != rank_) give_back();
  if (color < 0) return nullptr;
  std::vector<int> members;
  int new_rank = -1;
  for (const auto& [order, world_rank] : chosen) {
    if (order.second == rank_) new_rank = static_cast<int>(members.size());
    members.push_back(world_rank);
  }
  return std::make_shared<Communicator>(runtime_, context, std::move(members), new_rank, offered[new_root]);
}

std::shared_ptr<Communicator> Communicator::alone() {
  runtime_->require_active("comm.alone");
  return std::make_shared<Communicator>(runtime_, runtime_->take_context(), std::vector<int>{members_[rank_]}, 0);
}

}  // namespace rma
