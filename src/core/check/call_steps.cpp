#include "check/call_steps.hpp"

namespace rma::check {

CallSteps::CallSteps(std::shared_ptr<WindowChecker> checker, CallHost& host, PendingMemory& memory)
    : checker_(std::move(checker)), host_(host), watches_(host, memory) {}

std::span<const Span> CallSteps::spans_of(const Region& region) {
  spans_.clear();
  region.for_each_run([&](uint64_t offset, uint64_t length) { spans_.push_back({offset, offset + length}); });
  merge_in_place(spans_);
  return spans_;
}

uint64_t CallSteps::record(int target, const std::string& call, AccessKind kind, std::string_view op,
                           std::string_view dtype, uint32_t element_bytes, std::span<const Span> spans, Arrays arrays) {
  // The slots not watched by the end (the call touched nothing, or a step threw) go back.
  struct Unwatched {
    CallHost& host;
    Arrays& arrays;
    ~Unwatched() {
      for (std::optional<ArraySlot>* slot : {&arrays.result, &arrays.origin}) {
        if (*slot) host.release(**slot);
      }
    }
  } unwatched{host_, arrays};
  uint64_t serial = ++serial_;
  if (spans.empty()) return serial;
  if (checker_->awaits_post(target)) {  // start's post clock comes before the first access to that target
    host_.blocking([&] { checker_->take_post(target); });
  }
  bool found = false;
  AccessRef access = checker_->record(target, call, kind, op, dtype, element_bytes, spans, host_.call_site(), found);
  // The result's first: the host digests what the call has just filled, with nothing between.
  // (A call whose origin is its own result, as get_accumulate's may be, is one erroneous call:
  // found by its second array.)
  std::optional<std::string> shared;
  if (arrays.result) {
    shared = watches_.add({target, serial, *arrays.result, host_.digest(*arrays.result), access, true});
    arrays.result.reset();
  }
  if (arrays.origin) {
    std::optional<std::string> also =
        watches_.add({target, serial, *arrays.origin, host_.digest(*arrays.origin), std::move(access), false});
    if (!shared) shared = std::move(also);
    arrays.origin.reset();
  }
  if (shared) {
    finished(std::move(shared));
    found = true;
  }
  if (found) report();  // at the call itself
  return serial;
}

void CallSteps::request_completed(int target, uint64_t serial) {
  finished(watches_.finish_request(target, serial));
  report();
}

void CallSteps::flushed(std::span<const int> targets, bool local) {
  if (!local) checker_->complete(targets);  // (a flush_local orders nothing at the target)
  finished(watches_.finish_targets(targets));
  if (!local) checker_->send_batches(targets);
  checker_->drain();
  report();
}

void CallSteps::exchange(const char* call) {
  checker_->exchange_all([call] { return std::string(call) + " (RMA_CHECK's exchange of accesses)"; });
}

void CallSteps::fenced() {
  finished(watches_.finish_all());
  report();
}

void CallSteps::freed(const char* call) {
  finished(watches_.finish_all());
  host_.blocking([&] { exchange(call); });
}

void CallSteps::posting() {
  host_.blocking([&] { checker_->posting(); });
}

void CallSteps::posted() {
  static const std::string& kExposure = interned("exposure (post)");
  checker_->new_epoch(kExposure);
}

void CallSteps::started(std::vector<int> group) {
  checker_->expect_posts(group);
  access_group_ = std::move(group);
  static const std::string& kStart = interned("start");
  checker_->new_epoch(kStart);
}

void CallSteps::completing(Window& window) {
  host_.blocking([&] {
    window.await_posts("complete");
    checker_->completing(access_group_);
  });
}

void CallSteps::completed() {
  std::vector<int> group = std::move(access_group_);
  access_group_.clear();
  finished(watches_.finish_targets(group));
  report();
}

void CallSteps::waited() {
  host_.blocking([&] { checker_->waited(); });
  report();
}

void CallSteps::locked(int target, bool exclusive) {
  checker_->locked(target, exclusive);
  locks_[target] = exclusive;
}

void CallSteps::locked_all() {
  checker_->locked_all();
  lock_all_ = true;
}

void CallSteps::unlocking(int target) {
  auto lock = locks_.find(target);
  if (lock == locks_.end()) return;  // (a lock that _try_lock took, say: not the checker's)
  bool exclusive = lock->second;
  locks_.erase(lock);
  checker_->unlocking(std::span<const int>(&target, 1), exclusive);
}

void CallSteps::unlocking_all() {
  if (!lock_all_) return;
  lock_all_ = false;
  checker_->unlocking(checker_->everyone(), false);
}

void CallSteps::unlocked(std::span<const int> targets) {
  finished(watches_.finish_targets(targets));
  checker_->drain();
  report();
}

void CallSteps::synced() {
  checker_->drain(/*poll=*/true);
  report();
}

void CallSteps::report() {
  std::optional<std::string> found = checker_->take_report();
  if (found) host_.report(*found);
}

}  // namespace rma::check
