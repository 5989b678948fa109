// A communicator's collectives: in shared memory where every member shares this host
// (host/shared_barrier.hpp, host/shared_exchange.hpp, host/peer_read_allreduce.hpp), else
// through point-to-point messages in tags of their own (point_to_point.cpp's post and wait_for).
#include <cstring>
#include <string>
#include <utility>

#include "base/errors.hpp"
#include "base/wire.hpp"
#include "host/peer_read_allreduce.hpp"
#include "runtime/communicator.hpp"
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

// [count u64][length u64 ...][data ...]
Bytes pack_list(const std::vector<Bytes>& items) {
  Bytes out;
  uint64_t count = items.size();
  wire::append_bytes(out, &count, 8);
  for (const Bytes& item : items) {
    uint64_t length = item.size();
    wire::append_bytes(out, &length, 8);
  }
  for (const Bytes& item : items) wire::append_bytes(out, item.data(), item.size());
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

}  // namespace rma
