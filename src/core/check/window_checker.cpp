#include "check/window_checker.hpp"

#include "runtime/wire.hpp"

namespace rma::check {

namespace {

// Tags of the checker's messages, on its own communicator.
constexpr int kPostTag = 1, kCompleteTag = 2, kAccessesTag = 3;

std::vector<uint64_t> bounds_of(const Spans& spans) {
  std::vector<uint64_t> bounds;
  bounds.reserve(spans.size() * 2);
  for (const Span& span : spans) {
    bounds.push_back(span.start);
    bounds.push_back(span.stop);
  }
  return bounds;
}

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
                             std::string window)
    : clock_(clock),
      comm_(std::move(comm)),
      world_(std::move(world)),
      window_(std::move(window)),
      rank_(comm_->rank()),
      journal_(window_),
      sent_(world_.size(), 0),
      received_(world_.size(), 0) {
  listen_ = comm_->irecv(Communicator::kAnySource, kAccessesTag, "RMA_CHECK's receive");
}

void WindowChecker::forget_made_if_moved() {
  const ClockStamp& now = clock_.now();
  if (now != made_at_) {  // the clock moved: accesses made before are of another time
    made_at_ = now;
    made_.clear();
  }
}

AccessRef WindowChecker::record(int target, const char* call, AccessKind kind, std::string_view op,
                                std::string_view dtype, Spans spans, const std::string& site, bool& found_now) {
  found_now = false;
  forget_made_if_moved();
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
    made->tick = clock_.tick;
    made->site = site;
    made->epoch = epoch_;
    access = made;
    key.call = access->call;  // (the key's names now live in the record itself)
    key.op = access->op;
    key.dtype = access->dtype;
    made_.emplace(std::move(key), access);
  }
  ++clock_.tick;
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
    made->tick = clock_.tick;
    made->done_tick = clock_.tick;
    made->done = clock_.next_publication();
    made->site = site;
    made->epoch = epoch_;
    access = made;
    made_.emplace(std::move(key), access);
  }
  ++clock_.tick;
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
  int64_t done = clock_.next_publication(), tick = clock_.tick;
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
  ++clock_.tick;
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

void WindowChecker::drain() {
  while (listen_->test()) take_batch();
}

void WindowChecker::take_batch() {
  Received message = listen_->wait();
  ++received_[message.source];
  listen_ = comm_->irecv(Communicator::kAnySource, kAccessesTag, "RMA_CHECK's receive");
  learn(decode(message.data));
}

void WindowChecker::post(std::span<const int> group) {
  drain();
  clock_.publish();
  std::vector<std::byte> bytes;
  append_clock(bytes, clock_.entries());
  for (int origin : group) comm_->send(bytes, origin, kPostTag);
}

void WindowChecker::expect_posts(std::span<const int> group) {
  drain();
  posts_.clear();
  posts_.insert(group.begin(), group.end());
}

void WindowChecker::take_post(int target) {
  if (posts_.erase(target) == 0) return;
  Bytes bytes = comm_->irecv(target, kPostTag, "win.start (RMA_CHECK's post clock)")->wait().data;
  size_t position = 0;
  clock_.merge(take_clock(bytes, position));
}

void WindowChecker::send_completes(std::span<const int> group) {
  for (int target : std::set<int>(posts_)) take_post(target);
  complete(group);
  clock_.publish();
  for (int target : group) {
    std::vector<std::byte> bytes;
    append_clock(bytes, clock_.entries());
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

void WindowChecker::exchange_all(const CallName& call) {
  std::vector<int> everyone(world_.size());
  for (size_t r = 0; r < everyone.size(); ++r) everyone[r] = static_cast<int>(r);
  complete(everyone);
  clock_.publish();
  std::vector<Bytes> items(world_.size());
  for (int r : everyone) {
    append_clock(items[r], clock_.entries());
    wire::append<int64_t>(items[r], sent_[r]);
    std::vector<std::byte> accesses = take_outgoing_bytes(r);
    items[r].insert(items[r].end(), accesses.begin(), accesses.end());
  }
  std::vector<Bytes> received = comm_->alltoall(items, call);
  for (int origin : everyone) {
    std::span<const std::byte> bytes = received[origin];
    size_t position = 0;
    clock_.merge(take_clock(bytes, position));
    auto sent = wire::take<int64_t>(bytes, position);
    learn(decode(bytes.subspan(position)));
    while (received_[origin] < sent) take_batch();  // what it sent without a collective call
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
