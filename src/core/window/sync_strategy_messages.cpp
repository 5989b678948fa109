// Synchronization by messages, for windows whose ranks are not all on this host (or with
// RMA_TRANSPORT=libfabric): the fence is the communicator's barrier, notices are messages
// that the receiver's progress engine counts, and each rank's progress engine keeps the lock
// queue of its own window and answers requests with grants.
#include "base/errors.hpp"
#include "base/wire.hpp"
#include "runtime/runtime.hpp"
#include "window/sync_strategy.hpp"
#include "window/window.hpp"  // the window message ids

namespace rma {

MessageSync::MessageSync(std::shared_ptr<Communicator> comm, uint32_t window, Where where)
    : Sync(comm->size()), comm_(std::move(comm)), window_(window), where_(std::move(where)) {
  int size = comm_->size();
  notices_.reset(new std::atomic<uint64_t>[2 * size]);
  for (int r = 0; r < 2 * size; ++r) notices_[r] = 0;
  count_notices_at(notices_.get(), notices_.get() + size);
  grant_.reset(new std::atomic<int>[size]);
  for (int r = 0; r < size; ++r) grant_[r] = 0;
  abandoned_.assign(size, 0);
  queue_memory_.reset(new std::byte[LockQueue::bytes(size)]);
  queue_ = LockQueue::make(queue_memory_.get(), size);
  riding_.resize(size);
  held_.resize(size);
  carried_.assign(size, 0);
}

void MessageSync::barrier() {
  comm_->barrier([this] { return where_("fence", -1); });
}

bool MessageSync::barrier_follows_calls() const { return comm_->size() == 2 && !comm_->barrier_in_shared_memory(); }

void MessageSync::notify(Notice notice, const std::vector<int>& ranks) {
  Bytes message;
  wire::append<uint32_t>(message, window_);
  uint16_t handler = notice == Notice::Post ? kWindowPost : kWindowComplete;
  for (int rank : ranks) comm_->runtime().transport().send(comm_->members()[rank], handler, message);
}

std::string MessageSync::lock_wait(int target, int type, const char* call) const {
  return where_(call, target) + " (waiting for the " + (type == kLockExclusiveType ? "exclusive" : "shared") +
         " lock on rank " + std::to_string(target) + ", held by another rank)";
}

void MessageSync::request(int target, int type, bool try_only, const char* call) {
  prepare_request(target, type, call);
  Bytes message;
  wire::append<uint32_t>(message, window_);
  wire::append<uint8_t>(message, static_cast<uint8_t>(type));
  wire::append<uint8_t>(message, try_only ? 1 : 0);
  comm_->runtime().transport().send(comm_->members()[target], kWindowLock, message);
}

void MessageSync::prepare_request(int target, int type, const char* call) {
  if (given_up(target)) {
    // A request given up earlier (interrupted) still waits in the target's queue, which has
    // room for one request per rank, and its answer would be taken for this one's: wait until
    // that grant came and was handed back.
    comm_->runtime().transport().wait_until([&] { return !given_up(target); }, comm_->runtime().deadline(),
                                            comm_->members(), [&] { return lock_wait(target, type, call); });
  }
  grant_[target] = 0;
}

void MessageSync::await_grant(int target, int type, const char* call) {
  // Any rank of the window may hold the lock, and one that dies holding it keeps it forever
  // (its data may be half written: the lock is not handed on). So a death anywhere in the
  // window ends the wait, as on shared memory (SharedSync::lock). Watching every rank here is
  // simpler than the target refusing queued requests when a holder dies, and needs no message.
  comm_->runtime().transport().wait_until([&] { return grant_[target].load() != 0; }, comm_->runtime().deadline(),
                                          comm_->members(), [&] { return lock_wait(target, type, call); });
}

bool MessageSync::lock(int target, int type, bool try_only, const char* call) {
  // (A try that finds an earlier request given up gets "not free": it is not.)
  if (try_only && given_up(target)) return false;
  request(target, type, try_only, call);
  try {
    await_grant(target, type, call);
  } catch (...) {
    // Given up (deadline, interrupt): the request stays queued at the target. Whenever its
    // grant comes, hand the lock straight back, or nobody else would ever get it.
    std::lock_guard lock(grant_mutex_);
    if (grant_[target].load() == 1) {
      send_unlock(target);
    } else if (grant_[target].load() == 0) {
      abandoned_[target] = 1;
    }
    throw;
  }
  return grant_[target].load() == 1;
}

int MessageSync::before_call(int target, bool native, const char* call) {
  Riding& riding = riding_[target];
  if (!riding.requested) {
    if (!native) {
      // One message instead of two each way: the request inside the call, its reply the grant.
      // (Counted as sent once the call's message left: carried.)
      prepare_request(target, riding.type, call);
      return riding.type;
    }
    request(target, riding.type, false, call);
    riding.requested = true;
  } else if (grant_[target].load() == 1) {
    riding = Riding{};
    return 0;
  }
  if (!native && riding.calls < kRidingCalls) {
    ++riding.calls;
    return 0;
  }
  // A wait given up here leaves the epoch open with its request on the way: unlock waits for
  // the grant again (the calls that rode are held at the target until it).
  await_grant(target, riding.type, call);
  riding = Riding{};
  return 0;
}

void MessageSync::carried(int target) {
  riding_[target].requested = true;
  riding_[target].calls = 1;
}

bool MessageSync::given_up(int target) {
  std::lock_guard lock(grant_mutex_);
  return abandoned_[target] != 0;
}

void MessageSync::unlock(int target) {
  Riding& riding = riding_[target];
  if (riding.type != 0) {
    if (!riding.requested) {  // no call to target in the epoch: no lock was ever asked for
      riding = Riding{};
      return;
    }
    // Requested, and no grant seen yet (only calls that wait for nothing went): the unlock must
    // not overtake it, or the target would release a lock it has not granted.
    if (grant_[target].load() != 1) await_grant(target, riding.type, "unlock");
    riding = Riding{};
  }
  send_unlock(target);
}

void MessageSync::send_unlock(int target) {
  Bytes message;
  wire::append<uint32_t>(message, window_);
  comm_->runtime().transport().send(comm_->members()[target], kWindowUnlock, message);
}

void MessageSync::lock_requested(int origin, int type, bool try_only, bool carried) {
  if (try_only && !queue_->free_for(type)) return answer(origin, 2);
  if (!queue_->enqueue(origin, type)) throw MalformedMessage("a lock request while its earlier one still waits");
  carried_[origin] = carried ? 1 : 0;
  grant_waiting();
}

void MessageSync::unlock_requested(int origin) {
  queue_->release(origin);
  grant_waiting();
}

void MessageSync::grant_waiting() {
  queue_->grant_waiting([&](int origin) {
    if (carried_[origin] == 0) answer(origin, 1);  // (else the carrying call's reply says it)
    carried_[origin] = 0;
    // The calls that rode the request are served now, after the grant and in their order.
    for (HeldCall& call : held_[origin]) released_.push_back(std::move(call));
    held_[origin].clear();
  });
}

bool MessageSync::holds(int origin) const {
  // Only a request that came inside a call is followed by calls before its grant; an eager
  // request left waiting (an interrupted lock) holds nothing back (the calls of a later fence
  // epoch, say).
  return carried_[origin] != 0 && queue_->waiting(origin);
}

void MessageSync::hold(int origin, HeldCall call) {
  if (held_[origin].size() >= static_cast<size_t>(kRidingCalls))
    throw MalformedMessage("more calls before a lock's grant than an origin sends (" + std::to_string(kRidingCalls) +
                           ")");
  held_[origin].push_back(std::move(call));
}

std::vector<MessageSync::HeldCall> MessageSync::take_released() {
  std::vector<HeldCall> released;
  released.swap(released_);
  return released;
}

void MessageSync::answer(int origin, uint8_t grant) {
  Bytes message;
  wire::append<uint32_t>(message, window_);
  wire::append<uint8_t>(message, grant);
  comm_->runtime().transport().send(comm_->members()[origin], kWindowGrant, message);
}

void MessageSync::grant_arrived(int target, int answer) {
  std::lock_guard lock(grant_mutex_);
  if (abandoned_[target]) {
    abandoned_[target] = 0;
    if (answer == 1) send_unlock(target);
    return;
  }
  grant_[target] = answer;
}

}  // namespace rma
