#include "check/window_checker.hpp"

#include <algorithm>

#include "runtime/wire.hpp"
#include "window/reduce.hpp"

namespace rma::check {

namespace {

// Tags of the checker's messages, on its own communicator.
constexpr int kPostTag = 1, kCompleteTag = 2, kAccessesTag = 3;

void append_clock(std::vector<std::byte>& out, const std::vector<int64_t>& entries) {
  wire::append<uint32_t>(out, static_cast<uint32_t>(entries.size()));
  for (int64_t entry : entries) wire::append(out, entry);
}

std::vector<int64_t> take_clock(std::span<const std::byte> data, size_t& position) {
  auto size = wire::take<uint32_t>(data, position);
  std::vector<int64_t> entries;
  entries.reserve(std::min<size_t>(size, data.size()));
  for (uint32_t i = 0; i < size; ++i) entries.push_back(wire::take<int64_t>(data, position));
  return entries;
}

}  // namespace

WindowChecker::WindowChecker(VectorClock& clock, std::shared_ptr<Communicator> comm, std::vector<int> world,
                             std::string window, std::shared_ptr<Window> lock_clocks)
    : clock_(clock),
      comm_(std::move(comm)),
      world_(std::move(world)),
      window_(std::move(window)),
      rank_(comm_->rank()),
      journal_(window_),
      sent_(world_.size(), 0),
      received_(world_.size(), 0),
      lock_clocks_(std::move(lock_clocks)),
      lock_clocks_in_(static_cast<size_t>(clock.size()) * world_.size(), 0),
      lock_clocks_out_(static_cast<size_t>(clock.size()), 0) {}

void WindowChecker::forget_made_if_moved() {
  ClockStamp now = clock_.now();
  if (now != made_at_) {  // the clock moved: accesses made before are of another time
    made_at_ = now;
    made_.clear();
  }
}

AccessRef WindowChecker::record(int target, const char* call, AccessKind kind, std::string_view op,
                                std::string_view dtype, Spans spans, const std::string& site, bool& found_now) {
  found_now = false;
  forget_made_if_moved();
  int64_t tick = clock_.take_tick();
  MadeKey key{target, call, kind, op, dtype, &site, bounds_of(spans)};
  auto known = made_.find(key);
  AccessRef access;
  if (known != made_.end()) {
    access = known->second;
  } else {
    auto made = std::make_shared<Access>();
    made->origin = world_[rank_];
    made->origin_rank = rank_;
    made->target_rank = target;
    made->call = call;
    made->kind = kind;
    made->op = op;
    made->dtype = dtype;
    made->spans = std::move(spans);
    made->clock = made_at_;
    made->tick = tick;
    made->site = site;
    made->epoch = epoch_;
    access = made;
    key.call = access->call;  // (the key's names now live in the record itself)
    key.op = access->op;
    key.dtype = access->dtype;
    made_.emplace(std::move(key), access);
  }
  Pending& pending = inflight_[target];
  auto check = [&](const Access& earlier) {
    std::optional<std::string> why = conflict(earlier, *access);
    if (!why) return false;
    keep(conflict_message(window_, earlier, *access, *why));
    found_now = true;
    return true;
  };
  if (pending.members.contains(access.get())) {  // made again before completing: only with itself can it conflict
    check(*access);
  } else {
    for (const AccessRef& earlier : pending.accesses) {
      if (overlap(earlier->spans, access->spans) && check(*earlier)) break;
    }
    pending.accesses.push_back(access);
    pending.members.insert(access.get());
  }
  return access;
}

void WindowChecker::direct(int target, bool store, Spans spans, const std::string& site) {
  if (spans.empty()) return;
  forget_made_if_moved();
  int64_t tick = clock_.take_tick();
  const char* call = store ? "store" : "load";
  MadeKey key{target, call, store ? AccessKind::Write : AccessKind::Read, "", "", &site, bounds_of(spans)};
  auto known = made_.find(key);
  AccessRef access;
  if (known != made_.end()) {
    access = known->second;
  } else {
    std::string memory = target == rank_ ? "win.local" : "win.shared(" + std::to_string(target) + ")";
    auto made = std::make_shared<Access>();
    made->origin = world_[rank_];
    made->origin_rank = rank_;
    made->target_rank = target;
    made->call = store ? "store to " + memory : "load of " + memory;
    made->kind = key.kind;
    made->spans = std::move(spans);
    made->clock = made_at_;
    made->tick = tick;
    made->done_tick = tick;
    made->done = clock_.next_publication();
    made->site = site;
    made->epoch = epoch_;
    access = made;
    made_.emplace(std::move(key), access);
  }
  auto pending = inflight_.find(target);  // this rank's calls to the target, not completed
  if (pending != inflight_.end()) {
    for (const AccessRef& earlier : pending->second.accesses) {
      if (!overlap(earlier->spans, access->spans)) continue;
      std::optional<std::string> why = conflict(*earlier, *access);
      if (why) keep(conflict_message(window_, *earlier, *access, *why));
    }
  }
  if (known != made_.end()) return;
  if (target == rank_) {
    learn({*access});
  } else {  // travels with this rank's completed calls to the target
    Outgoing& out = outgoing_[target];
    if (out.sent_as.emplace(access.get(), access->done).second) {
      out.accesses.push_back(*access);
      out.keep_alive.push_back(access);
    }
  }
}

void WindowChecker::new_epoch(std::string_view kind, std::string_view where) {
  ++epochs_;
  epoch_ = std::string(kind) + " epoch " + std::to_string(epochs_) + std::string(where);
  made_.clear();
}

void WindowChecker::complete(std::span<const int> targets) {
  int64_t done = clock_.next_publication(), tick = clock_.take_tick();
  for (int target : targets) {
    auto pending = inflight_.find(target);
    if (pending == inflight_.end()) continue;
    Outgoing& out = outgoing_[target];
    for (AccessRef& access : pending->second.accesses) {
      if (!out.sent_as.emplace(access.get(), done).second) continue;  // a repetition completed by the same publication
      Access stamped = *access;
      stamped.done_tick = tick;
      stamped.done = done;
      out.accesses.push_back(std::move(stamped));
      out.keep_alive.push_back(std::move(access));
    }
    inflight_.erase(pending);
  }
}

void WindowChecker::send_batches(std::span<const int> targets) {
  for (int target : targets) {
    auto out = outgoing_.find(target);
    if (out != outgoing_.end() && out->second.accesses.size() >= kBatch) send(target);
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
  if (out != outgoing_.end()) outgoing_.erase(out);
  return bytes;
}

void WindowChecker::send(int target) {
  auto out = outgoing_.find(target);
  if (out == outgoing_.end() || out->second.accesses.empty()) return;
  if (target == rank_) {
    std::vector<Access> accesses = std::move(out->second.accesses);
    outgoing_.erase(out);
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

void WindowChecker::drain() {
  while (listening().test()) take_batch();
}

void WindowChecker::take_batch() {
  Received message = listening().wait();
  listen_.reset();  // (collected: the next is posted when needed)
  ++received_[message.source];
  learn(decode(message.data));
}

void WindowChecker::post(std::span<const int> group) {
  drain();
  std::vector<std::byte> bytes;
  append_clock(bytes, clock_.publish());
  for (int origin : group) comm_->send(bytes, origin, kPostTag);
}

void WindowChecker::expect_posts(std::span<const int> group) {
  drain();
  posts_.clear();
  posts_.insert(group.begin(), group.end());
}

void WindowChecker::take_post(int target) {
  if (!posts_.contains(target)) return;
  Bytes bytes = comm_->irecv(target, kPostTag, "win.start (RMA_CHECK's post clock)")->wait().data;
  posts_.erase(target);  // (only once it came: an interrupted wait leaves it expected)
  size_t position = 0;
  clock_.merge(take_clock(bytes, position));
}

void WindowChecker::send_completes(std::span<const int> group) {
  for (int target : std::set<int>(posts_)) take_post(target);
  complete(group);
  std::vector<int64_t> now = clock_.publish();
  for (int target : group) {
    std::vector<std::byte> bytes;
    append_clock(bytes, now);
    std::vector<std::byte> accesses = take_outgoing_bytes(target);
    bytes.insert(bytes.end(), accesses.begin(), accesses.end());
    comm_->send(bytes, target, kCompleteTag);
  }
  drain();
}

void WindowChecker::take_completes(std::span<const int> group) {
  for (int origin : group) {
    Bytes bytes = comm_->irecv(origin, kCompleteTag, "win.wait (RMA_CHECK's complete)")->wait().data;
    size_t position = 0;
    clock_.merge(take_clock(bytes, position));
    learn(decode(std::span<const std::byte>(bytes).subspan(position)));
  }
  drain();
}

void WindowChecker::locked(int target, bool exclusive) {
  drain();
  // An exclusive lock comes after every earlier holder; a shared one after the exclusive ones.
  size_t width = static_cast<size_t>(clock_.size());
  std::span<int64_t> earlier = std::span<int64_t>(lock_clocks_in_).subspan(target * width, width);
  uint64_t row = exclusive ? 0 : width * sizeof(int64_t);
  lock_clocks_->get(target, earlier.data(), Region::contiguous(row, width * sizeof(int64_t), sizeof(int64_t)),
                    "lock (RMA_CHECK's lock clocks)");
  lock_clocks_->flush_all("lock (RMA_CHECK's lock clocks)");
  clock_.merge(earlier);
  new_epoch(exclusive ? "exclusive lock" : "shared lock", " on rank " + std::to_string(target));
}

void WindowChecker::locked_all() {
  drain();
  size_t width = static_cast<size_t>(clock_.size());
  for (size_t target = 0; target < world_.size(); ++target) {
    lock_clocks_->get(static_cast<int>(target), lock_clocks_in_.data() + target * width,
                      Region::contiguous(width * sizeof(int64_t), width * sizeof(int64_t), sizeof(int64_t)),
                      "lock_all (RMA_CHECK's lock clocks)");
  }
  lock_clocks_->flush_all("lock_all (RMA_CHECK's lock clocks)");
  for (size_t target = 0; target < world_.size(); ++target) {
    clock_.merge(std::span<const int64_t>(lock_clocks_in_).subspan(target * width, width));
  }
  new_epoch("lock_all");
}

void WindowChecker::unlocking(std::span<const int> targets, bool exclusive) {
  complete(targets);
  lock_clocks_out_ = clock_.publish();  // (the same size each time: its memory stays where the calls read it)
  uint64_t bytes = lock_clocks_out_.size() * sizeof(int64_t);
  for (int target : targets) {
    for (uint64_t row : {uint64_t{0}, bytes}) {
      if (row != 0 && !exclusive) continue;
      lock_clocks_->accumulate(target, ReduceOp::Max, ElementType::Int64, lock_clocks_out_.data(),
                               Region::contiguous(row, bytes, sizeof(int64_t)), "unlock (RMA_CHECK's lock clocks)");
    }
  }
  lock_clocks_->flush_all("unlock (RMA_CHECK's lock clocks)");
  for (int target : targets) send(target);
}

void WindowChecker::exchange_all(const CallName& call) {
  int n = size();
  std::vector<int> everyone(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) everyone[r] = r;
  complete(everyone);
  for (int r : everyone) send(r);  // (this rank's own go to its journal)
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
  if (std::any_of(everyone.begin(), everyone.end(), [&](int origin) { return received_[origin] < sent_by(origin); })) {
    listen_.reset();  // (a message it had taken goes back, in arrival order)
    for (int origin : everyone) {
      while (received_[origin] < sent_by(origin)) {
        Received message = comm_->irecv(origin, kAccessesTag, "RMA_CHECK's receive")->wait();
        ++received_[origin];
        learn(decode(message.data));
      }
    }
  }
  journal_.clear();
  new_epoch("fence");
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
