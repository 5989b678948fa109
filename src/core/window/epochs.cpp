#include "window/epochs.hpp"

#include <algorithm>

#include "base/errors.hpp"
#include "window/lock_queue.hpp"

namespace rma {

Epochs::Epochs(int rank, int size, std::string label)
    : rank_(rank),
      size_(size),
      label_(std::move(label)),
      in_access_group_(size, 0),
      post_matched_(size, 0),
      held_(size, 0),
      held_nocheck_(size, 0) {}

std::string Epochs::where(const char* call, int target) const {
  std::string text = std::string("win.") + call;
  if (target >= 0) text += " to rank " + std::to_string(target);
  return text + " on rank " + std::to_string(rank_) + " of " + label_;
}

void Epochs::check_open(const char* call) const {
  if (freed_) throw RmaError("rma: " + where(call, -1) + ": the window was freed");
}

void Epochs::check_mode(int mode, const char* call) const {
  constexpr int kAllModes = kModeNoCheck | kModeNoStore | kModeNoPut | kModeNoPrecede | kModeNoSucceed;
  if (mode & ~kAllModes) {
    throw UsageError("rma: " + where(call, -1) + ": mode " + std::to_string(mode) +
                     " is not a combination of rma.Mode flags");
  }
}

void Epochs::check_rank(int64_t target, const char* call, bool allow_null) const {
  if (allow_null && target == kProcNull) return;
  if (target < 0 || target >= size_) {
    throw UsageError("rma: " + where(call, -1) + ": rank " + std::to_string(target) +
                     " is not a rank of the window (size " + std::to_string(size_) + ")");
  }
}

void Epochs::check_group(const std::vector<int>& group, const char* call) const {
  std::vector<char> seen(size_, 0);
  for (int rank : group) {
    if (rank < 0 || rank >= size_) {
      throw UsageError("rma: " + where(call, -1) + ": rank " + std::to_string(rank) +
                       " in the group is not a rank of the window (size " + std::to_string(size_) + ")");
    }
    if (seen[rank]++) {
      throw UsageError("rma: " + where(call, -1) + ": ranks must be distinct, but rank " + std::to_string(rank) +
                       " is in the group twice");
    }
  }
}

std::string Epochs::ranks_text(const std::vector<int>& ranks) {
  std::string text = "[";
  for (size_t i = 0; i < ranks.size(); ++i) text += (i ? ", " : "") + std::to_string(ranks[i]);
  return text + "]";
}

// ---- communication calls ----

void Epochs::admit(const char* call, int target) {
  check_open(call);
  check_rank(target, call, true);
  if (!admits(target)) refuse_call(call, target);
  ++calls_;
}

void Epochs::refuse_call(const char* call, int target) const {
  if (access_open_) {  // (admits() refuses inside an access epoch only outside its group)
    throw EpochError("rma: " + where(call, target) + ": rank " + std::to_string(target) +
                     " is not in the group of the open access epoch (win.start(" + ranks_text(access_group_) + "))");
  }
  throw EpochError("rma: " + where(call, target) +
                   ": no access epoch is open; open one with win.fence(), win.start(group) or win.lock(rank)");
}

// ---- fence ----

void Epochs::before_fence(int mode) const {
  check_open("fence");
  check_mode(mode, "fence");
  if (in_passive_epoch(kProcNull)) {
    throw EpochError("rma: " + where("fence", -1) +
                     ": a passive-target epoch (lock) is open on this window; unlock first");
  }
  if (access_open_ || exposure_open_) {
    throw EpochError("rma: " + where("fence", -1) + ": a " +
                     (access_open_ ? "start/complete access" : "post/wait exposure") +
                     " epoch is open; fence and post/start epochs never overlap");
  }
  if ((mode & kModeNoPrecede) && calls_ > 0) {
    throw EpochError("rma: " + where("fence", -1) + ": Mode.NOPRECEDE promises that no " +
                     "communication call precedes this fence, but " + std::to_string(calls_) + " did");
  }
}

void Epochs::fenced(int mode) {
  calls_ = 0;
  fence_ = !(mode & kModeNoSucceed);
}

void Epochs::check_fence_idle(const char* call, bool locking) const {
  check_open(call);
  if (!locking && in_passive_epoch(kProcNull)) {
    throw EpochError("rma: " + where(call, -1) +
                     ": a passive-target epoch (lock) is open on this window; unlock first");
  }
  if (fence_ && calls_ > 0) {
    throw EpochError("rma: " + where(call, -1) + ": a fence epoch with " + std::to_string(calls_) +
                     " communication call(s) is open; end it with win.fence(Mode.NOSUCCEED)");
  }
}

// ---- post/start/complete/wait ----

void Epochs::before_opening(const char* call, const std::vector<int>& group, int mode, bool open,
                            const char* ender) const {
  check_mode(mode, call);
  check_fence_idle(call, false);
  check_group(group, call);
  if (open) {
    bool access = std::string(call) == "start";
    throw EpochError("rma: " + where(call, -1) + ": an " + (access ? "access" : "exposure") + " epoch (win." + call +
                     "(" + ranks_text(access ? access_group_ : exposure_group_) + ")) is already open; call win." +
                     ender + "() first");
  }
}

void Epochs::post(const std::vector<int>& group, int mode) {
  before_opening("post", group, mode, exposure_open_, "wait");
  fence_ = false;  // a fence followed by no call does not keep the window from other epochs
  exposure_group_ = group;
  exposure_nocheck_ = mode & kModeNoCheck;
  exposure_open_ = true;
}

void Epochs::start(const std::vector<int>& group, int mode) {
  before_opening("start", group, mode, access_open_, "complete");
  fence_ = false;
  access_group_ = group;
  access_nocheck_ = mode & kModeNoCheck;
  std::fill(in_access_group_.begin(), in_access_group_.end(), 0);
  std::fill(post_matched_.begin(), post_matched_.end(), 0);
  for (int rank : group) in_access_group_[rank] = 1;
  access_open_ = true;
  calls_ = 0;
}

void Epochs::before_complete() const {
  check_open("complete");
  if (!access_open_) {
    throw EpochError("rma: " + where("complete", -1) + ": no access epoch is open (win.start was not called)");
  }
}

void Epochs::completed() {
  access_open_ = false;
  calls_ = 0;
}

void Epochs::before_wait(const char* call) const {
  check_open(call);
  if (!exposure_open_) {
    throw EpochError("rma: " + where(call, -1) + ": no exposure epoch is open (win.post was not called)");
  }
}

void Epochs::waited() { exposure_open_ = false; }

// ---- passive target ----

void Epochs::before_lock(const char* call, int target, int type) {
  check_open(call);
  check_rank(target, call);
  if (type != kLockExclusiveType && type != kLockSharedType) {
    throw UsageError("rma: " + where(call, target) + ": lock_type must be rma.LOCK_EXCLUSIVE or rma.LOCK_SHARED");
  }
  if (access_open_ || exposure_open_) {
    throw EpochError("rma: " + where(call, target) + ": a post/start epoch is open on this window");
  }
  check_fence_idle(call, true);
  if (held_[target] || lock_all_) {
    throw EpochError("rma: " + where(call, target) + ": this rank already holds a lock on rank " +
                     std::to_string(target) + " in this epoch (a second lock on one target)");
  }
  fence_ = false;
}

void Epochs::locked(int target, int type, bool nocheck) {
  held_[target] = static_cast<uint8_t>(type);
  held_nocheck_[target] = nocheck;
}

void Epochs::before_unlock(int target) const {
  check_open("unlock");
  if (lock_all_) {
    throw EpochError("rma: " + where("unlock", target) +
                     ": the epoch was opened by win.lock_all(); end it with win.unlock_all()");
  }
  if (target < 0 || target >= size_ || !held_[target]) {
    throw EpochError("rma: " + where("unlock", target) + ": this rank holds no lock on rank " + std::to_string(target) +
                     " (win.lock was not called)");
  }
}

void Epochs::released(int target) {
  held_[target] = 0;
  held_nocheck_[target] = 0;
}

void Epochs::unlocked() { calls_ = 0; }

void Epochs::before_lock_all() {
  check_open("lock_all");
  if (access_open_ || exposure_open_) {
    throw EpochError("rma: " + where("lock_all", -1) + ": a post/start epoch is open on this window");
  }
  check_fence_idle("lock_all", true);
  if (in_passive_epoch(kProcNull)) {
    throw EpochError("rma: " + where("lock_all", -1) + ": a passive-target epoch is already open");
  }
  fence_ = false;
}

void Epochs::locked_all(bool nocheck) {
  if (nocheck) {
    std::fill(held_.begin(), held_.end(), static_cast<uint8_t>(kLockSharedType));
    std::fill(held_nocheck_.begin(), held_nocheck_.end(), 1);
  }
  lock_all_ = true;
}

void Epochs::before_unlock_all() const {
  check_open("unlock_all");
  if (!lock_all_) throw EpochError("rma: " + where("unlock_all", -1) + ": no lock_all epoch is open");
}

void Epochs::unlocked_all() {
  lock_all_ = false;
  calls_ = 0;
}

bool Epochs::before_flush(int target, const char* call) const {
  check_open(call);
  if (target == kProcNull) return false;
  if (target < 0 || target >= size_ || !passive_access(target)) {
    throw EpochError("rma: " + where(call, target) + ": flush needs a passive-target epoch " + "(win.lock(" +
                     std::to_string(target) + ") or win.lock_all())");
  }
  return true;
}

void Epochs::before_flush_all(const char* call) const {
  check_open(call);
  if (!in_passive_epoch(kProcNull)) {
    throw EpochError("rma: " + where(call, -1) + ": flush needs a passive-target epoch");
  }
}

bool Epochs::in_passive_epoch(int target) const {
  if (target == kProcNull) {
    return lock_all_ || std::any_of(held_.begin(), held_.end(), [](uint8_t h) { return h != 0; });
  }
  return target >= 0 && target < size_ && passive_access(target);
}

// ---- free ----

void Epochs::before_free() const {
  if (freed_) {
    throw RmaError("rma: win.free on rank " + std::to_string(rank_) + ": " + label_ + " was already freed");
  }
  if (in_passive_epoch(kProcNull)) {
    throw EpochError("rma: " + where("free", -1) + ": a passive-target epoch is open (unlock first)");
  }
  if (access_open_ || exposure_open_) {
    throw EpochError(
        "rma: " + where("free", -1) + ": inside an " +
        (access_open_ ? "access epoch (call win.complete() first)" : "exposure epoch (call win.wait() first)"));
  }
  if (fence_ && calls_ > 0) {
    throw EpochError("rma: " + where("free", -1) + ": inside a fence epoch with " + std::to_string(calls_) +
                     " communication call(s) not yet completed; call win.fence() first");
  }
}

void Epochs::freed_now() {
  freed_ = true;
  fence_ = false;
}

}  // namespace rma
