// Making communicators: a communicator's members and what it meets in (its barrier board's
// slot, when they share a host), split and alone. Its calls: point_to_point.cpp (send, irecv
// and their waits), collectives.cpp (barrier, bcast, gather... reduce, allreduce).
#include "runtime/communicator.hpp"

#include <algorithm>
#include <cstring>
#include <utility>

#include "base/errors.hpp"
#include "runtime/runtime.hpp"

namespace rma {

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
