// Synchronization of a window whose ranks are all on this host, through their control blocks
// (window/shared_control.hpp): no message and no progress thread in between, so a fence or a
// lock costs what the atomics cost, and a wait sleeps on this rank's bell.
#include "base/errors.hpp"
#include "runtime/runtime.hpp"
#include "window/epochs.hpp"
#include "window/shared_control.hpp"
#include "window/sync_strategy.hpp"

namespace rma {

namespace {
const char* lock_name(int type) { return type == kLockExclusiveType ? "exclusive" : "shared"; }
}  // namespace

std::function<void(const char*)> watch_dead_holders(Communicator* comm, std::string label) {
  return [comm, label = std::move(label)](const char* what) {
    Transport& transport = comm->runtime().transport();
    if (transport.peers().any_dead()) {
      transport.peers().check(comm->members(), comm->runtime().rank(),
                              "a call on " + label + " (waiting for " + what + ")");
    }
  };
}

SharedSync::SharedSync(std::shared_ptr<Communicator> comm, std::vector<std::shared_ptr<SharedSegment>> blocks,
                       const std::string& label, Where where)
    : Sync(comm->size()), comm_(comm), where_(std::move(where)) {
  control_ = std::make_unique<SharedControl>(std::move(blocks), comm->rank(), watch_dead_holders(comm.get(), label));
  // This rank's notice counters live in its control block, where the senders add to them.
  count_notices_at(control_->posts(comm->rank()), control_->completes(comm->rank()));
}

SharedSync::~SharedSync() = default;

Bell* SharedSync::bell() { return &control_->bell(comm_->rank()); }

void SharedSync::wake(int target) {
  control_->bell(target).ring();  // a load when nobody sleeps (this rank's too: another thread may)
}

void SharedSync::barrier() {
  // Everyone's direct stores are done: meet in shared memory.
  Runtime& runtime = comm_->runtime();
  control_->fence().pass(
      runtime.transport(), runtime.deadline(), comm_->members(), [&](const std::vector<int>& missing) {
        return where_("fence", -1) + " (waiting for ranks " + Epochs::ranks_text(missing) + " to fence)";
      });
}

void SharedSync::notify(Notice notice, const std::vector<int>& ranks) {
  auto counters = notice == Notice::Post ? &SharedControl::posts : &SharedControl::completes;
  for (int rank : ranks) control_->notify(counters, rank);
}

bool SharedSync::lock(int target, int type, bool try_only, const char* call) {
  // The origin queues itself in the target's lock queue; whoever grants it (itself, or the
  // holder that unlocks) sets its grant word and rings its bell.
  int rank = comm_->rank();
  std::atomic<uint32_t>& grant = control_->grants(target)[rank];
  grant.store(0);
  control_->with_queue(target, [&](LockQueue& queue) {
    if (try_only && !queue.free_for(type)) {
      grant.store(2);
      return;
    }
    queue.enqueue(rank, type);
    grant_from(queue, target);
  });
  if (grant.load() != 0) return grant.load() == 1;  // granted (or refused) at once
  // Any rank may hold the lock: one that dies holding it would keep it forever, so a death
  // anywhere in the window ends the wait.
  try {
    comm_->runtime().transport().wait_until(
        [&] { return grant.load() != 0; }, comm_->runtime().deadline(), comm_->members(),
        [&] {
          return where_(call, target) + " (waiting for the " + lock_name(type) + " lock on rank " +
                 std::to_string(target) + ", held by another rank)";
        },
        bell());
  } catch (...) {
    // Given up (deadline, interrupt): leave the queue, or hand back a grant that came meanwhile.
    control_->with_queue(target, [&](LockQueue& queue) {
      if (!queue.withdraw(rank)) release_from(queue, target);
    });
    throw;
  }
  return grant.load() == 1;
}

void SharedSync::unlock(int target) {
  control_->with_queue(target, [&](LockQueue& queue) { release_from(queue, target); });
}

void SharedSync::release_from(LockQueue& queue, int target) {
  queue.release(comm_->rank());
  grant_from(queue, target);
}

void SharedSync::grant_from(LockQueue& queue, int target) {
  queue.grant_waiting([&](int origin) {
    control_->grants(target)[origin].store(1);
    if (origin != comm_->rank()) control_->bell(origin).ring();  // (this rank is awake)
  });
}

}  // namespace rma
