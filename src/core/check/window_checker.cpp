#include "check/window_checker.hpp"

#include <algorithm>

#include "elements/reduce.hpp"

namespace rma::check {

namespace {

// The tag of the checker's messages of accesses, on its own communicator.
constexpr int kAccessesTag = 3;

}  // namespace

WindowChecker::WindowChecker(VectorClock& clock, std::shared_ptr<Communicator> comm, std::vector<int> world,
                             std::string window, std::shared_ptr<Window> board)
    : clock_(clock),
      comm_(std::move(comm)),
      world_(std::move(world)),
      window_(std::move(window)),
      rank_(comm_->rank()),
      journal_(window_),
      sent_(world_.size(), 0),
      received_(world_.size(), 0),
      board_(std::move(board)),
      board_in_(static_cast<size_t>(clock.size()) * world_.size(), 0),
      board_out_(2 * static_cast<size_t>(clock.size()), 0) {
  uint64_t row = static_cast<uint64_t>(clock.size()) * sizeof(int64_t);
  for (int r = 0; r < size(); ++r) everyone_.push_back(r);
  for (int r = 0; r < kBoardRows; ++r) row_[r] = Region::contiguous(r * row, row, sizeof(int64_t));
  lock_rows_ = Region::contiguous(0, 2 * row, sizeof(int64_t));
}

void WindowChecker::forget_made_if_moved() {
  uint64_t version = clock_.version();
  if (version != made_version_) {  // the clock moved: accesses made before are of another time
    made_version_ = version;
    made_at_ = clock_.now();
    made_.clear();
  }
}

WindowChecker::Made& WindowChecker::made_record(const std::string& call, bool& fresh) {
  auto known = made_.find(probe_);
  fresh = known == made_.end();
  if (!fresh) return known->second;
  auto made = std::make_shared<Access>();
  made->origin = world_[rank_];
  made->origin_rank = rank_;
  made->target_rank = probe_.target;
  made->call = call;
  made->kind = probe_.kind;
  made->op = probe_.op;
  made->dtype = probe_.dtype;
  made->element_bytes = probe_.element_bytes;
  made->spans = probe_.spans;
  made->clock = made_at_;
  made->site = *probe_.site;
  made->epoch = epoch_;
  MadeKey key = probe_;
  key.op = made->op;  // (the key's names now live in the record itself)
  key.dtype = made->dtype;
  return made_.emplace(std::move(key), Made{std::move(made)}).first->second;
}

AccessRef WindowChecker::record(int target, const std::string& call, AccessKind kind, std::string_view op,
                                std::string_view dtype, uint32_t element_bytes, std::span<const Span> spans,
                                const std::string& site, bool& found_now) {
  found_now = false;
  forget_made_if_moved();
  int64_t tick = clock_.take_tick();
  probe_.target = target;
  probe_.call = &call;
  probe_.kind = kind;
  probe_.op = op;
  probe_.dtype = dtype;
  probe_.element_bytes = element_bytes;
  probe_.site = &site;
  probe_.spans.assign(spans.begin(), spans.end());
  bool fresh = false;
  Made& made = made_record(call, fresh);
  if (fresh) std::const_pointer_cast<Access>(made.access)->tick = tick;
  const AccessRef& access = made.access;
  Pending& pending = inflight_[target];
  auto check = [&](const Access& earlier) {
    std::optional<std::string> why = conflict(earlier, *access);
    if (!why) return false;
    keep(conflict_message(window_, earlier, *access, *why));
    found_now = true;
    return true;
  };
  if (made.pending_round == pending.round) {  // made again before completing: only with itself can it conflict
    check(*access);
  } else {
    for (const AccessRef& earlier : pending.accesses) {
      if (overlap(earlier->spans, access->spans) && check(*earlier)) break;
    }
    pending.accesses.push_back(access);
    made.pending_round = pending.round;
  }
  return access;
}

void WindowChecker::direct(int target, bool store, std::span<const Span> spans, const std::string& site) {
  if (spans.empty()) return;
  forget_made_if_moved();
  int64_t tick = clock_.take_tick();
  std::string memory = target == rank_ ? "win.local" : "win.shared(" + std::to_string(target) + ")";
  const std::string& call = interned(store ? "store to " + memory : "load of " + memory);
  probe_.target = target;
  probe_.call = &call;
  probe_.kind = store ? AccessKind::Write : AccessKind::Read;
  probe_.op = probe_.dtype = {};
  probe_.element_bytes = 0;
  probe_.site = &site;
  probe_.spans.assign(spans.begin(), spans.end());
  bool fresh = false;
  Made& made = made_record(call, fresh);
  if (fresh) {
    auto access = std::const_pointer_cast<Access>(made.access);
    access->tick = access->done_tick = tick;
    access->done = clock_.next_publication();
  }
  const AccessRef& access = made.access;
  auto pending = inflight_.find(target);  // this rank's calls to the target, not completed
  if (pending != inflight_.end()) {
    for (const AccessRef& earlier : pending->second.accesses) {
      if (!overlap(earlier->spans, access->spans)) continue;
      std::optional<std::string> why = conflict(*earlier, *access);
      if (why) keep(conflict_message(window_, *earlier, *access, *why));
    }
  }
  if (!fresh) return;
  if (target == rank_) {
    learn({*access});
  } else {  // travels with this rank's completed calls to the target
    outgoing_[target].add(*access, access->done, access->done_tick);
  }
}

void WindowChecker::new_epoch(const std::string& kind, int on_rank) {
  epoch_ = Epoch{&kind, ++epochs_, on_rank};
  made_.clear();
}

void WindowChecker::complete(std::span<const int> targets) {
  int64_t done = clock_.next_publication(), tick = clock_.take_tick();
  for (int target : targets) {
    auto pending = inflight_.find(target);
    if (pending == inflight_.end() || pending->second.accesses.empty()) continue;
    Outgoing& out = outgoing_[target];
    for (const AccessRef& access : pending->second.accesses) out.add(*access, done, tick);
    pending->second.accesses.clear();
    ++pending->second.round;
  }
}

void WindowChecker::send_batches(std::span<const int> targets) {
  for (int target : targets) {
    auto out = outgoing_.find(target);
    if (out == outgoing_.end() || out->second.accesses.empty()) continue;
    if (target == rank_ || out->second.accesses.size() >= kBatch ||
        std::chrono::steady_clock::now() - out->second.since >= kBatchAge) {
      send(target);
    }
  }
}

std::vector<std::byte> WindowChecker::take_outgoing_bytes(int target) {
  std::vector<const Access*> accesses;
  auto out = outgoing_.find(target);
  if (out != outgoing_.end()) {
    for (const Access& access : out->second.accesses) accesses.push_back(&access);
  }
  std::vector<std::byte> bytes;
  encode(accesses, bytes);
  if (out != outgoing_.end()) out->second.accesses.clear();  // (its node and memory kept for the next)
  return bytes;
}

void WindowChecker::send(int target) {
  auto out = outgoing_.find(target);
  if (out == outgoing_.end() || out->second.accesses.empty()) return;
  if (target == rank_) {
    std::vector<Access> accesses = std::move(out->second.accesses);
    out->second.accesses.clear();
    learn(std::move(accesses));
    return;
  }
  comm_->send(take_outgoing_bytes(target), target, kAccessesTag);
  ++sent_[target];
}

void WindowChecker::learn(std::vector<Access> accesses) { keep(journal_.add(std::move(accesses))); }

PendingReceive& WindowChecker::listening() {
  if (!listen_) listen_ = comm_->irecv(Communicator::kAnySource, kAccessesTag, "RMA_CHECK's receive");
  return *listen_;
}

void WindowChecker::drain(bool poll) {
  while (poll ? listening().test() : listening().arrived()) take_batch();
}

void WindowChecker::take_batch() {
  Received message = listening().wait();
  listen_.reset();  // (collected: the next is posted when needed)
  ++received_[message.source];
  learn(decode(message.data));
}

void WindowChecker::posting() {
  drain();
  std::vector<int64_t> now = clock_.publish();
  std::copy(now.begin(), now.end(), board_out_.begin());
  board_->put(rank_, board_out_.data(), row_[2], "post (RMA_CHECK's clock board)");
  board_->flush(rank_, "post (RMA_CHECK's clock board)");
}

void WindowChecker::expect_posts(std::span<const int> group) {
  drain();
  posts_.clear();
  posts_.insert(group.begin(), group.end());
}

void WindowChecker::take_post(int target) {
  if (!posts_.contains(target)) return;
  take_clock(target, row_[2], "start (RMA_CHECK's clock board)");
  posts_.erase(target);  // (only once it came: an interrupted flush leaves it expected)
}

void WindowChecker::take_clock(int rank, const Region& row, const char* call) {
  size_t width = static_cast<size_t>(clock_.size());
  std::span<int64_t> entries = std::span<int64_t>(board_in_).subspan(rank * width, width);
  board_->get(rank, entries.data(), row, call);
  board_->flush(rank, call);
  clock_.merge(entries);
}

void WindowChecker::leave_clock(std::span<const int> targets, const Region& rows, const char* call) {
  std::vector<int64_t> now = clock_.publish();
  std::copy(now.begin(), now.end(), board_out_.begin());
  std::copy(now.begin(), now.end(), board_out_.begin() + static_cast<ptrdiff_t>(now.size()));
  for (int target : targets)
    board_->accumulate(target, ReduceOp::Max, ElementType::Int64, board_out_.data(), rows, call);
  board_->flush_all(call);
}

void WindowChecker::completing(std::span<const int> group) {
  for (int target : std::set<int>(posts_)) take_post(target);
  complete(group);
  leave_clock(group, row_[3], "complete (RMA_CHECK's clock board)");
  send_batches(group);
  drain();
}

void WindowChecker::waited() {
  take_clock(rank_, row_[3], "wait (RMA_CHECK's clock board)");
  drain();
}

void WindowChecker::locked(int target, bool exclusive) {
  drain();
  // An exclusive lock comes after every earlier holder; a shared one after the exclusive ones.
  take_clock(target, row_[exclusive ? 0 : 1], "lock (RMA_CHECK's clock board)");
  static const std::string& kExclusive = interned("exclusive lock");
  static const std::string& kShared = interned("shared lock");
  new_epoch(exclusive ? kExclusive : kShared, target);
}

void WindowChecker::locked_all() {
  drain();
  size_t width = static_cast<size_t>(clock_.size());
  for (size_t target = 0; target < world_.size(); ++target) {
    board_->get(static_cast<int>(target), board_in_.data() + target * width, row_[1],
                "lock_all (RMA_CHECK's clock board)");
  }
  board_->flush_all("lock_all (RMA_CHECK's clock board)");
  for (size_t target = 0; target < world_.size(); ++target) {
    clock_.merge(std::span<const int64_t>(board_in_).subspan(target * width, width));
  }
  static const std::string& kLockAll = interned("lock_all");
  new_epoch(kLockAll);
}

void WindowChecker::unlocking(std::span<const int> targets, bool exclusive) {
  complete(targets);
  // Both rows for an exclusive lock, row 0 for a shared one. (The buffer keeps its size and
  // place: the accumulates read it until the flush completes them, which a Ctrl-C may end.)
  leave_clock(targets, exclusive ? lock_rows_ : row_[0], "unlock (RMA_CHECK's clock board)");
  send_batches(targets);
}

void WindowChecker::exchange_all(const CallName& call) {
  int n = size();
  complete(everyone_);
  for (int r : everyone_) send(r);  // (this rank's own go to its journal)
  std::vector<int64_t> entries = clock_.publish();
  // One allreduce (MAX) carries every rank's clock and, row by row, how many messages of
  // accesses each rank has sent each other: counts only grow, so MAX keeps each sender's row.
  size_t width = entries.size();
  std::vector<int64_t> cells(width + static_cast<size_t>(n) * n, 0);
  std::copy(entries.begin(), entries.end(), cells.begin());
  std::copy(sent_.begin(), sent_.end(), cells.begin() + width + static_cast<size_t>(rank_) * n);
  auto bytes = std::as_writable_bytes(std::span<int64_t>(cells));
  comm_->allreduce(bytes, bytes, ElementType::Int64, ReduceOp::Max, call);
  clock_.merge(std::span<const int64_t>(cells).first(width));
  // What each origin sent before the fence comes first from it (one rank's messages arrive
  // in the order sent): receives of that origin take it, with the any-source receive
  // withdrawn, so that what a faster rank sends after the fence stays for the next epoch.
  auto sent_by = [&](int origin) { return cells[width + static_cast<size_t>(origin) * n + rank_]; };
  if (std::any_of(everyone_.begin(), everyone_.end(),
                  [&](int origin) { return received_[origin] < sent_by(origin); })) {
    listen_.reset();  // (a message it had taken goes back, in arrival order)
    for (int origin : everyone_) {
      while (received_[origin] < sent_by(origin)) {
        Received message = comm_->irecv(origin, kAccessesTag, "RMA_CHECK's receive")->wait();
        ++received_[origin];
        learn(decode(message.data));
      }
    }
  }
  journal_.clear();
  static const std::string& kFence = interned("fence");
  new_epoch(kFence);
}

void WindowChecker::keep(std::optional<std::string> found) {
  if (found && !found_) found_ = std::move(found);
}

std::optional<std::string> WindowChecker::take_report() {
  std::optional<std::string> found = std::move(found_);
  found_.reset();
  if (!found || reported_) return std::nullopt;
  reported_ = true;
  return found;
}

}  // namespace rma::check
