// The epoch rules of one window on one rank, and nothing else: which epochs are open (fence,
// post/start/complete/wait, per-target locks, lock_all), which calls they admit, and every
// EpochError that breaking a rule raises. It knows nothing of the fabric or of shared memory:
// the Window asks it before each call and tells it what happened after (post matched, lock
// granted, epoch ended), so it is testable alone (tests/cpp/test_epochs.cpp).
//
// Each check names the call and the rank in its error, as where() spells it. Checks throw
// RmaError once the window is freed, UsageError for malformed arguments (ranks, modes, lock
// types), EpochError for a call the open epochs do not permit; a throwing check changes nothing.
// Only the caller's thread uses it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace rma {

// rma.Mode; the values are the Python flags'.
enum WindowMode : int {
  kModeNoCheck = 1,
  kModeNoStore = 2,
  kModeNoPut = 4,
  kModeNoPrecede = 8,
  kModeNoSucceed = 16,
};

// A target rank meaning "nobody": the call is a no-op that still needs its epoch.
constexpr int kProcNull = -2;

class Epochs {
 public:
  // rank: this rank; size: the window's ranks; label: the window's name in messages.
  Epochs(int rank, int size, std::string label);

  // "win.<call>[ to rank <target>] on rank <rank> of <label>" (target < 0: no target).
  std::string where(const char* call, int target) const;
  const std::string& label() const noexcept { return label_; }
  int size() const noexcept { return size_; }

  // ---- communication calls ----
  // Whether the open epochs permit a call to target (a rank, or kProcNull: any epoch). The one
  // predicate behind both admit() and the direct path's quick admission.
  bool admits(int target) const {
    if (target == kProcNull) return fence_ || access_open_ || in_passive_epoch(kProcNull);
    return passive_access(target) || (access_open_ ? in_access_group_[target] != 0 : fence_);
  }
  // The checked admission of a communication call: RmaError if freed, UsageError if target is
  // neither a rank nor kProcNull, EpochError unless admits(target) (no epoch open, or target
  // outside the start group). Counts the call.
  void admit(const char* call, int target);
  // The first call to a target of a start epoch must wait for that target's post (unless the
  // epoch is NOCHECK); post_matched records that it came.
  bool awaits_post(int target) const {
    return access_open_ && !access_nocheck_ && in_access_group_[target] && !post_matched_[target] &&
           !passive_access(target);
  }
  void post_matched(int target) { post_matched_[target] = 1; }
  // Calls admitted since the last synchronization; uncount() takes one back (a quick admission
  // whose call went to the general path, which counts it again).
  uint64_t calls() const noexcept { return calls_; }
  void count() noexcept { ++calls_; }
  void uncount() noexcept { --calls_; }

  // ---- fence ----
  // Before fence(mode): RmaError if freed; UsageError for unknown mode bits; EpochError inside
  // a passive or post/start epoch, or with Mode.NOPRECEDE after calls.
  void before_fence(int mode) const;
  // The fence completed: a new fence epoch is open unless Mode.NOSUCCEED.
  void fenced(int mode);

  // ---- general active target (post/start/complete/wait) ----
  // post: UsageError for a bad mode or group (ranks out of range, twice); EpochError in a
  // passive epoch, after a fence epoch with calls, or with an exposure epoch open. Opens it.
  void post(const std::vector<int>& group, int mode);
  // start: the same rules for an access epoch. Opens it: calls go to its group only.
  void start(const std::vector<int>& group, int mode);
  // complete: RmaError if freed, EpochError unless an access epoch is open.
  void before_complete() const;
  void completed();  // the access epoch ends
  // wait and test: RmaError if freed, EpochError unless an exposure epoch is open.
  void before_wait(const char* call) const;
  void waited();  // the exposure epoch ends
  bool fence_open() const noexcept { return fence_; }
  bool access_open() const noexcept { return access_open_; }
  bool access_nocheck() const noexcept { return access_nocheck_; }
  const std::vector<int>& access_group() const noexcept { return access_group_; }
  bool exposure_nocheck() const noexcept { return exposure_nocheck_; }
  const std::vector<int>& exposure_group() const noexcept { return exposure_group_; }

  // ---- passive target ----
  // Before lock (or try_lock) on target: RmaError if freed; UsageError for a rank out of range
  // or a lock type other than exclusive/shared; EpochError inside a post/start epoch, after a
  // fence epoch with calls, or when this rank already holds a lock on target (or lock_all).
  void before_lock(const char* call, int target, int type);
  void locked(int target, int type, bool nocheck);  // the lock was granted (or NOCHECK)
  // Before unlock(target): RmaError if freed; EpochError in a lock_all epoch or without a
  // lock on target.
  void before_unlock(int target) const;
  void released(int target);  // this rank no longer holds target's lock
  void unlocked();            // unlock or unlock_all finished: calls were completed
  // Before lock_all: RmaError if freed; EpochError inside a post/start epoch, after a fence
  // epoch with calls, or inside a passive epoch.
  void before_lock_all();
  void locked_all(bool nocheck);  // every lock was granted (or NOCHECK); held(t) set by locked()
  // Before unlock_all: RmaError if freed; EpochError unless a lock_all epoch is open. Then
  // release every target held (released()) and call unlocked_all().
  void before_unlock_all() const;
  void unlocked_all();
  // Before flush(target): RmaError if freed; EpochError without a passive epoch to target.
  // False for kProcNull (nothing to flush).
  bool before_flush(int target, const char* call = "flush") const;
  // Before flush_all: RmaError if freed; EpochError without any passive epoch.
  void before_flush_all(const char* call = "flush_all") const;
  // Whether a passive epoch permits calls to target (kProcNull: whether one is open at all).
  bool in_passive_epoch(int target) const;
  bool passive_access(int target) const { return lock_all_ || held_[target] != 0; }
  int held(int target) const { return held_[target]; }  // 0, or the lock type held
  bool held_nocheck(int target) const { return held_nocheck_[target] != 0; }

  // ---- free ----
  // Before free: RmaError if already freed; EpochError inside a passive, post/start, or fence
  // epoch with calls not yet completed.
  void before_free() const;
  void freed_now();  // every epoch is over; every later call raises RmaError
  bool freed() const noexcept { return freed_; }
  // RmaError "the window was freed" if it was.
  void check_open(const char* call) const;

  // UsageError unless mode is a combination of rma.Mode flags.
  void check_mode(int mode, const char* call) const;
  // UsageError unless target is a rank of the window (or kProcNull, when allow_null).
  void check_rank(int64_t target, const char* call, bool allow_null = false) const;
  // "[1, 2]"
  static std::string ranks_text(const std::vector<int>& ranks);

 private:
  // Whether another kind of epoch may open after a fence: a fence epoch with no call since
  // the fence does not keep it from that (the opener then closes the fence epoch). RmaError
  // if freed; EpochError if calls were made, or (except for lock calls, which check more
  // precisely) inside a passive epoch.
  void check_fence_idle(const char* call, bool locking) const;
  // The checks of post and start ("post"/"start"): mode, fence, group, and the epoch they
  // open not yet open (else win.<ender>() first).
  void before_opening(const char* call, const std::vector<int>& group, int mode, bool open, const char* ender) const;
  void check_group(const std::vector<int>& group, const char* call) const;
  [[noreturn]] void refuse_call(const char* call, int target) const;

  int rank_, size_;
  std::string label_;
  bool freed_ = false;
  bool fence_ = false;  // a fence epoch is open
  uint64_t calls_ = 0;
  bool access_open_ = false, access_nocheck_ = false;
  std::vector<int> access_group_;
  std::vector<char> in_access_group_, post_matched_;  // by rank, for the open access epoch
  bool exposure_open_ = false, exposure_nocheck_ = false;
  std::vector<int> exposure_group_;
  std::vector<uint8_t> held_, held_nocheck_;  // by target: 0 or the lock type; taken NOCHECK
  bool lock_all_ = false;
};

}  // namespace rma
