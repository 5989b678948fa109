// The epoch state machine alone (window/epochs.hpp): every transition, legal and illegal, with
// no fabric and no shared memory. Each illegal one checks the error type and part of its text.
#include <string>
#include <vector>

#include "base/errors.hpp"
#include "check.hpp"
#include "window/epochs.hpp"
#include "window/lock_queue.hpp"

namespace {
using rma::EpochError;
using rma::Epochs;
using rma::RmaError;
using rma::UsageError;
constexpr int kExclusive = rma::kLockExclusiveType, kShared = rma::kLockSharedType;
constexpr int kNull = rma::kProcNull;

// Rank 0 of a window of 4 ranks.
Epochs fresh() { return Epochs(0, 4, "window 7 (test)"); }

bool admits_only(const Epochs& epochs, const std::vector<int>& targets) {
  for (int target = 0; target < 4; ++target) {
    bool expected = false;
    for (int t : targets) expected = expected || t == target;
    if (epochs.admits(target) != expected) return false;
  }
  return true;
}

void lock_every_rank(Epochs& epochs) {
  epochs.before_lock_all();
  for (int target = 0; target < 4; ++target) epochs.locked(target, kShared, false);
  epochs.locked_all(false);
}
}  // namespace

int main() {
  test::run("names a call with its rank and window", [] {
    Epochs epochs = fresh();
    CHECK(epochs.where("put", 2) == "win.put to rank 2 on rank 0 of window 7 (test)");
    CHECK(epochs.where("fence", -1) == "win.fence on rank 0 of window 7 (test)");
    CHECK(Epochs::ranks_text({1, 3}) == "[1, 3]");
  });

  // ---- no epoch ----

  test::run("no epoch admits no call", [] {
    Epochs epochs = fresh();
    CHECK(admits_only(epochs, {}));
    CHECK(!epochs.admits(kNull));
    CHECK_THROWS(EpochError, "no access epoch is open", epochs.admit("put", 1));
    CHECK_THROWS(EpochError, "win.put to rank 1", epochs.admit("put", 1));
    CHECK_THROWS(EpochError, "no access epoch is open", epochs.admit("get", kNull));
    CHECK(epochs.calls() == 0);
    CHECK(!epochs.in_passive_epoch(kNull));
  });

  test::run("a target that is no rank is a usage error", [] {
    Epochs epochs = fresh();
    epochs.fenced(0);
    CHECK_THROWS(UsageError, "rank 4 is not a rank of the window (size 4)", epochs.admit("put", 4));
    CHECK_THROWS(UsageError, "rank -1 is not a rank", epochs.admit("put", -1));
    CHECK(epochs.calls() == 0);
  });

  // ---- fence ----

  test::run("a fence opens an epoch to every rank and counts calls", [] {
    Epochs epochs = fresh();
    epochs.before_fence(0);
    epochs.fenced(0);
    CHECK(admits_only(epochs, {0, 1, 2, 3}));
    CHECK(epochs.admits(kNull));
    epochs.admit("put", 2);
    epochs.admit("get", kNull);
    CHECK(epochs.calls() == 2);
    CHECK(!epochs.awaits_post(2));
    epochs.before_fence(0);
    epochs.fenced(0);
    CHECK(epochs.calls() == 0);
    CHECK(admits_only(epochs, {0, 1, 2, 3}));
  });

  test::run("Mode.NOSUCCEED closes the fence epoch", [] {
    Epochs epochs = fresh();
    epochs.fenced(0);
    epochs.before_fence(rma::kModeNoSucceed);
    epochs.fenced(rma::kModeNoSucceed);
    CHECK(admits_only(epochs, {}));
    CHECK_THROWS(EpochError, "no access epoch is open", epochs.admit("put", 0));
  });

  test::run("Mode.NOPRECEDE after calls is an epoch error, before any is not", [] {
    Epochs epochs = fresh();
    epochs.before_fence(rma::kModeNoPrecede);
    epochs.fenced(0);
    epochs.before_fence(rma::kModeNoPrecede);
    epochs.admit("put", 1);
    CHECK_THROWS(EpochError, "Mode.NOPRECEDE promises that no communication call precedes this fence, but 1 did",
                 epochs.before_fence(rma::kModeNoPrecede));
    epochs.uncount();
    epochs.before_fence(rma::kModeNoPrecede);
  });

  test::run("a mode that is no combination of flags is a usage error", [] {
    Epochs epochs = fresh();
    CHECK_THROWS(UsageError, "mode 64 is not a combination of rma.Mode flags", epochs.before_fence(64));
    CHECK_THROWS(UsageError, "win.post", epochs.post({1}, 64));
    CHECK_THROWS(UsageError, "win.start", epochs.start({1}, 64));
    epochs.check_mode(
        rma::kModeNoCheck | rma::kModeNoStore | rma::kModeNoPut | rma::kModeNoPrecede | rma::kModeNoSucceed, "fence");
  });

  test::run("a fence inside another kind of epoch is an epoch error", [] {
    Epochs locked = fresh();
    locked.before_lock("lock", 1, kExclusive);
    locked.locked(1, kExclusive, false);
    CHECK_THROWS(EpochError, "a passive-target epoch (lock) is open on this window; unlock first",
                 locked.before_fence(0));
    Epochs all = fresh();
    lock_every_rank(all);
    CHECK_THROWS(EpochError, "passive-target epoch (lock)", all.before_fence(0));
    Epochs started = fresh();
    started.start({1}, 0);
    CHECK_THROWS(EpochError, "a start/complete access epoch is open; fence and post/start epochs never overlap",
                 started.before_fence(0));
    Epochs posted = fresh();
    posted.post({1}, 0);
    CHECK_THROWS(EpochError, "a post/wait exposure epoch is open", posted.before_fence(0));
  });

  test::run("a fence not followed by any call does not keep the window from other epochs", [] {
    Epochs post = fresh();
    post.fenced(0);
    post.post({1}, 0);
    CHECK(admits_only(post, {}));  // the fence epoch is over
    Epochs start = fresh();
    start.fenced(0);
    start.start({2}, 0);
    CHECK(admits_only(start, {2}));
    Epochs lock = fresh();
    lock.fenced(0);
    lock.before_lock("lock", 3, kShared);
    lock.locked(3, kShared, false);
    CHECK(admits_only(lock, {3}));
    Epochs lock_all = fresh();
    lock_all.fenced(0);
    lock_every_rank(lock_all);
    CHECK(admits_only(lock_all, {0, 1, 2, 3}));
    Epochs free = fresh();
    free.fenced(0);
    free.before_free();
  });

  test::run("a fence followed by calls keeps the window from other epochs", [] {
    Epochs epochs = fresh();
    epochs.fenced(0);
    epochs.admit("put", 1);
    const char* text = "a fence epoch with 1 communication call(s) is open; end it with win.fence(Mode.NOSUCCEED)";
    CHECK_THROWS(EpochError, text, epochs.post({1}, 0));
    CHECK_THROWS(EpochError, text, epochs.start({1}, 0));
    CHECK_THROWS(EpochError, text, epochs.before_lock("lock", 1, kExclusive));
    CHECK_THROWS(EpochError, text, epochs.before_lock_all());
    CHECK_THROWS(EpochError,
                 "inside a fence epoch with 1 communication call(s) not yet completed; call win.fence() first",
                 epochs.before_free());
    CHECK(admits_only(epochs, {0, 1, 2, 3}));  // nothing changed
  });

  test::run("a check that fails changes nothing", [] {
    Epochs epochs = fresh();
    epochs.fenced(0);
    CHECK_THROWS(UsageError, "ranks must be distinct", epochs.start({1, 1}, 0));
    CHECK_THROWS(UsageError, "lock_type must be", epochs.before_lock("lock", 1, 7));
    CHECK(admits_only(epochs, {0, 1, 2, 3}));  // the idle fence epoch is still open
    CHECK(!epochs.access_open());
  });

  // ---- post/start/complete/wait ----

  test::run("start admits calls to its group only", [] {
    Epochs epochs = fresh();
    epochs.start({1, 2}, 0);
    CHECK(epochs.access_open());
    CHECK(admits_only(epochs, {1, 2}));
    CHECK(epochs.admits(kNull));
    epochs.admit("put", kNull);
    CHECK_THROWS(EpochError, "rank 3 is not in the group of the open access epoch (win.start([1, 2]))",
                 epochs.admit("put", 3));
    CHECK_THROWS(EpochError, "win.put to rank 3", epochs.admit("put", 3));
    CHECK(epochs.calls() == 1);
  });

  test::run("the first call to each target of a start epoch waits for its post", [] {
    Epochs epochs = fresh();
    epochs.start({1, 2}, 0);
    CHECK(epochs.awaits_post(1) && epochs.awaits_post(2));
    CHECK(!epochs.awaits_post(3));  // not in the group
    epochs.post_matched(1);
    CHECK(!epochs.awaits_post(1) && epochs.awaits_post(2));
    epochs.before_complete();
    epochs.completed();
    epochs.start({1}, 0);
    CHECK(epochs.awaits_post(1));  // a new epoch matches a new post
    Epochs nocheck = fresh();
    nocheck.start({1}, rma::kModeNoCheck);
    CHECK(nocheck.access_nocheck());
    CHECK(!nocheck.awaits_post(1));
  });

  test::run("complete ends the access epoch", [] {
    Epochs epochs = fresh();
    epochs.start({1}, 0);
    epochs.admit("put", 1);
    CHECK(epochs.access_group() == std::vector<int>{1});
    epochs.before_complete();
    epochs.completed();
    CHECK(!epochs.access_open());
    CHECK(epochs.calls() == 0);
    CHECK(admits_only(epochs, {}));
    CHECK_THROWS(EpochError, "no access epoch is open (win.start was not called)", epochs.before_complete());
  });

  test::run("a second start or post before the first ends is an epoch error", [] {
    Epochs epochs = fresh();
    epochs.start({1}, 0);
    CHECK_THROWS(EpochError, "an access epoch (win.start([1])) is already open; call win.complete() first",
                 epochs.start({2}, 0));
    epochs.post({2, 3}, 0);
    CHECK_THROWS(EpochError, "an exposure epoch (win.post([2, 3])) is already open; call win.wait() first",
                 epochs.post({1}, 0));
  });

  test::run("groups hold distinct ranks of the window", [] {
    Epochs epochs = fresh();
    CHECK_THROWS(UsageError, "ranks must be distinct, but rank 2 is in the group twice", epochs.start({2, 2}, 0));
    CHECK_THROWS(UsageError, "rank 4 in the group is not a rank of the window (size 4)", epochs.post({4}, 0));
    CHECK_THROWS(UsageError, "rank -1 in the group", epochs.start({-1}, 0));
    epochs.start({}, 0);  // an empty group is legal
    CHECK(admits_only(epochs, {}));
  });

  test::run("post opens an exposure epoch, which admits no call", [] {
    Epochs epochs = fresh();
    epochs.post({1, 3}, 0);
    CHECK((epochs.exposure_group() == std::vector<int>{1, 3}));
    CHECK(!epochs.exposure_nocheck());
    CHECK(admits_only(epochs, {}));
    CHECK_THROWS(EpochError, "no access epoch is open", epochs.admit("put", 1));
    epochs.before_wait("wait");
    epochs.waited();
    CHECK_THROWS(EpochError, "no exposure epoch is open (win.post was not called)", epochs.before_wait("wait"));
    CHECK_THROWS(EpochError, "win.test", epochs.before_wait("test"));
    Epochs nocheck = fresh();
    nocheck.post({1}, rma::kModeNoCheck);
    CHECK(nocheck.exposure_nocheck());
  });

  test::run("an access and an exposure epoch may be open together", [] {
    Epochs epochs = fresh();
    epochs.post({1}, 0);
    epochs.start({1}, 0);
    CHECK(admits_only(epochs, {1}));
    epochs.before_complete();
    epochs.completed();
    epochs.before_wait("wait");
    epochs.waited();
    epochs.before_free();
  });

  test::run("post and start inside a passive epoch are epoch errors", [] {
    Epochs epochs = fresh();
    epochs.before_lock("lock", 1, kShared);
    epochs.locked(1, kShared, false);
    CHECK_THROWS(EpochError, "win.post on rank 0 of window 7 (test): a passive-target epoch (lock) is open",
                 epochs.post({1}, 0));
    CHECK_THROWS(EpochError, "a passive-target epoch (lock) is open", epochs.start({1}, 0));
  });

  // ---- passive target ----

  test::run("a lock admits calls to its target only", [] {
    Epochs epochs = fresh();
    epochs.before_lock("lock", 1, kExclusive);
    epochs.locked(1, kExclusive, false);
    CHECK(admits_only(epochs, {1}));
    CHECK(epochs.admits(kNull));
    epochs.admit("put", kNull);
    CHECK(epochs.held(1) == kExclusive && !epochs.held_nocheck(1));
    CHECK(epochs.in_passive_epoch(1) && epochs.in_passive_epoch(kNull) && !epochs.in_passive_epoch(2));
    CHECK(!epochs.in_passive_epoch(9));
    CHECK_THROWS(EpochError, "no access epoch is open", epochs.admit("put", 2));
    epochs.before_lock("lock", 2, kShared);  // locks on other targets add to the epoch
    epochs.locked(2, kShared, true);
    CHECK(admits_only(epochs, {1, 2}));
    CHECK(epochs.held_nocheck(2));
  });

  test::run("a second lock on one target is an epoch error", [] {
    Epochs epochs = fresh();
    epochs.before_lock("lock", 1, kExclusive);
    epochs.locked(1, kExclusive, false);
    CHECK_THROWS(EpochError,
                 "win.lock to rank 1 on rank 0 of window 7 (test): this rank already holds a lock on rank 1",
                 epochs.before_lock("lock", 1, kShared));
  });

  test::run("a lock needs a rank, a lock type, and no post/start epoch", [] {
    Epochs epochs = fresh();
    CHECK_THROWS(UsageError, "rank 4 is not a rank of the window (size 4)", epochs.before_lock("lock", 4, kShared));
    CHECK_THROWS(UsageError, "rank -2 is not a rank", epochs.before_lock("lock", kNull, kShared));
    CHECK_THROWS(UsageError, "lock_type must be rma.LOCK_EXCLUSIVE or rma.LOCK_SHARED",
                 epochs.before_lock("lock", 1, 0));
    epochs.start({1}, 0);
    CHECK_THROWS(EpochError, "a post/start epoch is open on this window", epochs.before_lock("lock", 1, kShared));
    CHECK_THROWS(EpochError, "a post/start epoch is open on this window", epochs.before_lock_all());
    Epochs posted = fresh();
    posted.post({1}, 0);
    CHECK_THROWS(EpochError, "a post/start epoch is open", posted.before_lock("lock", 2, kShared));
    CHECK_THROWS(EpochError, "a post/start epoch is open", posted.before_lock_all());
  });

  test::run("unlock ends the lock on its target", [] {
    Epochs epochs = fresh();
    epochs.before_lock("lock", 1, kExclusive);
    epochs.locked(1, kExclusive, false);
    epochs.admit("put", 1);
    CHECK_THROWS(EpochError, "this rank holds no lock on rank 2 (win.lock was not called)", epochs.before_unlock(2));
    CHECK_THROWS(EpochError, "holds no lock on rank 9", epochs.before_unlock(9));
    epochs.before_unlock(1);
    epochs.released(1);
    epochs.unlocked();
    CHECK(epochs.calls() == 0);
    CHECK(!epochs.in_passive_epoch(kNull));
    CHECK(admits_only(epochs, {}));
    CHECK_THROWS(EpochError, "holds no lock on rank 1", epochs.before_unlock(1));
  });

  test::run("lock_all admits calls to every rank, until unlock_all", [] {
    Epochs epochs = fresh();
    lock_every_rank(epochs);
    CHECK(admits_only(epochs, {0, 1, 2, 3}));
    CHECK(epochs.in_passive_epoch(kNull));
    CHECK_THROWS(EpochError, "the epoch was opened by win.lock_all(); end it with win.unlock_all()",
                 epochs.before_unlock(1));
    CHECK_THROWS(EpochError, "a passive-target epoch is already open", epochs.before_lock_all());
    CHECK_THROWS(EpochError, "already holds a lock on rank 2", epochs.before_lock("lock", 2, kShared));
    epochs.admit("put", 3);
    epochs.before_unlock_all();
    for (int target = 0; target < 4; ++target) epochs.released(target);
    epochs.unlocked_all();
    CHECK(epochs.calls() == 0);
    CHECK(admits_only(epochs, {}));
    CHECK_THROWS(EpochError, "no lock_all epoch is open", epochs.before_unlock_all());
  });

  test::run("lock_all with NOCHECK holds every lock without acquisition", [] {
    Epochs epochs = fresh();
    epochs.before_lock_all();
    epochs.locked_all(true);
    for (int target = 0; target < 4; ++target) CHECK(epochs.held(target) == kShared && epochs.held_nocheck(target));
    CHECK(admits_only(epochs, {0, 1, 2, 3}));
  });

  test::run("lock_all inside a lock epoch is an epoch error", [] {
    Epochs epochs = fresh();
    epochs.before_lock("lock", 1, kShared);
    epochs.locked(1, kShared, false);
    CHECK_THROWS(EpochError, "win.lock_all on rank 0 of window 7 (test): a passive-target epoch is already open",
                 epochs.before_lock_all());
  });

  test::run("flush needs a passive epoch to its target", [] {
    Epochs epochs = fresh();
    CHECK(!epochs.before_flush(kNull));  // nothing to flush, whatever the epoch
    CHECK_THROWS(
        EpochError,
        "win.flush to rank 1 on rank 0 of window 7 (test): flush needs a passive-target epoch (win.lock(1) or win.lock_all())",
        epochs.before_flush(1));
    CHECK_THROWS(EpochError, "flush needs a passive-target epoch", epochs.before_flush(9));
    CHECK_THROWS(EpochError, "win.flush_all on rank 0 of window 7 (test): flush needs a passive-target epoch",
                 epochs.before_flush_all());
    epochs.fenced(0);
    CHECK_THROWS(EpochError, "flush needs a passive-target epoch", epochs.before_flush(1));  // a fence epoch is no lock
    epochs.before_lock("lock", 1, kShared);
    epochs.locked(1, kShared, false);
    CHECK(epochs.before_flush(1));
    CHECK_THROWS(EpochError, "win.lock(2)", epochs.before_flush(2));
    epochs.before_flush_all();
    Epochs all = fresh();
    lock_every_rank(all);
    CHECK(all.before_flush(3));
    all.before_flush_all();
  });

  // ---- free ----

  test::run("free inside an epoch is an epoch error", [] {
    Epochs locked = fresh();
    locked.before_lock("lock", 1, kShared);
    locked.locked(1, kShared, false);
    CHECK_THROWS(EpochError, "win.free on rank 0 of window 7 (test): a passive-target epoch is open (unlock first)",
                 locked.before_free());
    Epochs all = fresh();
    lock_every_rank(all);
    CHECK_THROWS(EpochError, "a passive-target epoch is open (unlock first)", all.before_free());
    Epochs started = fresh();
    started.start({1}, 0);
    CHECK_THROWS(EpochError, "inside an access epoch (call win.complete() first)", started.before_free());
    Epochs posted = fresh();
    posted.post({1}, 0);
    CHECK_THROWS(EpochError, "inside an exposure epoch (call win.wait() first)", posted.before_free());
  });

  test::run("after free every call is an error, and so is a second free", [] {
    Epochs epochs = fresh();
    epochs.fenced(0);
    epochs.before_free();
    epochs.freed_now();
    CHECK(epochs.freed());
    CHECK(admits_only(epochs, {}));  // the direct path admits nothing
    CHECK(!epochs.admits(kNull));
    const char* freed = "the window was freed";
    CHECK_THROWS(RmaError, freed, epochs.admit("put", 1));
    CHECK_THROWS(RmaError, "win.put on rank 0 of window 7 (test): the window was freed", epochs.admit("put", 1));
    CHECK_THROWS(RmaError, freed, epochs.before_fence(0));
    CHECK_THROWS(RmaError, freed, epochs.post({1}, 0));
    CHECK_THROWS(RmaError, freed, epochs.start({1}, 0));
    CHECK_THROWS(RmaError, freed, epochs.before_complete());
    CHECK_THROWS(RmaError, freed, epochs.before_wait("wait"));
    CHECK_THROWS(RmaError, freed, epochs.before_lock("lock", 1, kShared));
    CHECK_THROWS(RmaError, freed, epochs.before_unlock(1));
    CHECK_THROWS(RmaError, freed, epochs.before_lock_all());
    CHECK_THROWS(RmaError, freed, epochs.before_unlock_all());
    CHECK_THROWS(RmaError, freed, epochs.before_flush(1));
    CHECK_THROWS(RmaError, freed, epochs.before_flush_all());
    CHECK_THROWS(RmaError, "win.free on rank 0: window 7 (test) was already freed", epochs.before_free());
  });

  return test::finish();
}
