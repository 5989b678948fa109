// How the ranks of one window synchronize: the fence's meeting, the post and complete notices
// of general active target, and the locks of passive target. One per window, chosen when it
// is created:
//   SharedSync    every rank on this host: control blocks in shared memory (a fence barrier,
//                 notice counters, a lock queue with grant words per rank, a bell to sleep on),
//                 changed with CPU atomics by the ranks themselves (sync_strategy_shared.cpp);
//   MessageSync   messages through the transport; each target's progress engine serves its
//                 lock queue (sync_strategy_messages.cpp).
// The epoch rules are not here (window/epochs.hpp): a Sync only carries out what they allow.
// Its waits throw PeerError if a rank they depend on dies, TimeoutError at the runtime's
// deadline, Interrupted on a signal.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/bell.hpp"
#include "host/shared_segment.hpp"
#include "runtime/communicator.hpp"
#include "window/lock_queue.hpp"
#include "window/route.hpp"

namespace rma {

class SharedControl;

// What a rank that waits long for a spin lock of the control blocks of comm's window `label`
// calls (SharedControl's stalled): PeerError if some rank died, since it may have died holding
// the lock. (A live holder keeps it a few instructions, so the wait is long only then.)
std::function<void(const char* what)> watch_dead_holders(Communicator* comm, std::string label);

class Sync {
 public:
  enum class Notice { Post, Complete };
  virtual ~Sync() = default;

  // The fence's meeting of every rank, once this rank's calls completed.
  virtual void barrier() = 0;
  // Tells each rank of ranks that this rank posted (opened an exposure epoch for it) or
  // completed (ended its access epoch to it).
  virtual void notify(Notice notice, const std::vector<int>& ranks) = 0;
  // Whether what barrier() receives from each rank (notify: each notice) travels behind that
  // rank's calls to this one, in order, and is taken only after they were served: then those
  // calls need not be answered before it is sent (Window::complete_calls).
  virtual bool barrier_follows_calls() const { return false; }
  virtual bool notices_follow_calls() const { return false; }
  // The bell a wait for a notice or a grant sleeps on (null: the wait polls the transport).
  virtual Bell* bell() = 0;
  // Calls of this rank to target completed (a flush, an unlock, a fence, a complete): wakes a
  // win.wait_until sleeping on target's bell, for which the data may have changed.
  virtual void wake(int target) = 0;
  // Queues for target's lock of type (kLockExclusiveType/kLockSharedType) and waits for the
  // grant; try_only: refused unless grantable at once. True if granted. A wait given up
  // (deadline, interrupt, dead peer) leaves no request or lock behind.
  virtual bool lock(int target, int type, bool try_only, const char* call) = 0;
  // Gives back this rank's lock on target; the next waiters get it.
  virtual void unlock(int target) = 0;

  // Notices are counted per peer (a post for the next epoch may arrive before this one ends):
  // seen counters, which the senders advance, against used ones, which this rank advances.
  bool post_arrived(int target) const { return posts_seen_[target].load() > posts_used_[target]; }
  void take_post(int target) { ++posts_used_[target]; }
  bool complete_arrived(int origin) const { return completes_seen_[origin].load() > completes_used_[origin]; }
  void take_complete(int origin) { ++completes_used_[origin]; }
  // A notice message from rank `from` arrived (MessageSync; SharedSync's senders count).
  void noticed(Notice notice, int from) { ++(notice == Notice::Post ? posts_seen_ : completes_seen_)[from]; }

 protected:
  explicit Sync(int size) : posts_used_(size, 0), completes_used_(size, 0) {}
  // Where the senders count their notices to this rank (posts_seen[sender], completes_seen[sender]).
  void count_notices_at(std::atomic<uint64_t>* posts_seen, std::atomic<uint64_t>* completes_seen) {
    posts_seen_ = posts_seen;
    completes_seen_ = completes_seen;
  }

 private:
  std::atomic<uint64_t>*posts_seen_ = nullptr, *completes_seen_ = nullptr;
  std::vector<uint64_t> posts_used_, completes_used_;
};

class SharedSync final : public Sync {
 public:
  // blocks: every rank's control block (SharedControl::create_block), by rank, as mapped here;
  // label: the window's name, for errors.
  SharedSync(std::shared_ptr<Communicator> comm, std::vector<std::shared_ptr<SharedSegment>> blocks,
             const std::string& label, Where where);
  ~SharedSync() override;
  SharedControl& control() { return *control_; }

  void barrier() override;
  void notify(Notice notice, const std::vector<int>& ranks) override;
  Bell* bell() override;
  void wake(int target) override;
  bool lock(int target, int type, bool try_only, const char* call) override;
  void unlock(int target) override;

 private:
  void release_from(LockQueue& queue, int target);
  void grant_from(LockQueue& queue, int target);  // grants what the queue can, and rings them
  std::shared_ptr<Communicator> comm_;
  std::unique_ptr<SharedControl> control_;
  Where where_;
};

class MessageSync final : public Sync {
 public:
  MessageSync(std::shared_ptr<Communicator> comm, uint32_t window, Where where);

  void barrier() override;
  void notify(Notice notice, const std::vector<int>& ranks) override;
  // The transport keeps each source's messages in order and the service takes them one at a
  // time, so a notice or a barrier message comes after the calls sent before it, served.
  // A notice goes straight to its rank; the barrier's messages do only between two ranks (a
  // dissemination barrier of more relays them) meeting through messages, not shared memory.
  bool barrier_follows_calls() const override;
  bool notices_follow_calls() const override { return true; }
  Bell* bell() override { return nullptr; }
  // A wait_until polls through libfabric: the data of a one-sided write lands unannounced.
  void wake(int) override {}
  bool lock(int target, int type, bool try_only, const char* call) override;
  // Gives back the lock; a deferred lock never requested sends nothing, one requested waits
  // for its grant first.
  void unlock(int target) override;

  // A lock that rides the epoch's first call (a target on another host, Window::lock): lock()
  // sends nothing; the request leaves with the first call to target (before_call), so that
  // lock + put + unlock costs one round trip and one message instead of two round trips, and
  // an epoch with no call to target costs no message at all (as MPICH does; MPI's lock protects
  // the epoch's calls, which cannot reach the target before the grant).
  void defer_lock(int target, int type) { riding_[target] = Riding{static_cast<uint8_t>(type), false, 0}; }
  // Whether target's lock is deferred and its grant not yet seen here (the caller's thread).
  bool lock_ungranted(int target) const { return riding_[target].type != 0; }
  // Before a call to target under a deferred lock. The first call, if it travels as a message
  // (native: false), carries the request: the lock's type is returned, for the call's message
  // (FabricRoute::carry_lock), and its reply is the grant (grant_arrived). A native first call
  // sends the request alone. Later calls by message go at once, up to kRidingCalls in all (the
  // target holds them until its grant); a native write or read, which lands without the
  // target's service, or one call more, first waits for the grant. 0: carry nothing.
  int before_call(int target, bool native, const char* call);
  // The call that carried target's request left (its message is on its way).
  void carried(int target);
  // What a wait for target's calls says while its deferred lock's grant is not yet seen.
  std::string riding_wait(int target, const char* call) const { return lock_wait(target, riding_[target].type, call); }

  // Target side, from the progress engine (one message at a time): origin (a rank of the
  // window) asks for this rank's lock, gives it back; target answers our request (1 granted,
  // 2 refused).
  // carried: the request came inside the origin's first call, whose reply grants the lock (no
  // grant message), and the origin's calls until the grant are held (holds).
  void lock_requested(int origin, int type, bool try_only, bool carried = false);
  void unlock_requested(int origin);
  void grant_arrived(int target, int answer);
  // Target side: a call (handler kWindowApply or kWindowRead, the message from `position`
  // on) from origin (world rank `source`) whose lock request still waits here: held until
  // the grant. holds() says whether a call of origin must be held.
  struct HeldCall {
    int source;
    uint16_t handler;
    Bytes message;
    size_t position;
  };
  bool holds_any() const { return queue_->any_waiting(); }
  bool holds(int origin) const;
  void hold(int origin, HeldCall call);  // MalformedMessage beyond kRidingCalls
  // The calls whose origins were granted since the last call, in the order they came.
  std::vector<HeldCall> take_released();

 private:
  struct Riding {
    uint8_t type = 0;        // the deferred lock's type; 0: none, or its grant was seen
    bool requested = false;  // its request was sent
    uint8_t calls = 0;       // calls sent after the request, before the grant
  };
  void request(int target, int type, bool try_only, const char* call);  // sends a lock request
  void prepare_request(int target, int type, const char* call);         // before any request
  void await_grant(int target, int type, const char* call);
  void send_unlock(int target);  // the unlock message (an eager lock's, or one handed back)
  std::string lock_wait(int target, int type, const char* call) const;  // what a wait for a grant says
  void answer(int origin, uint8_t grant);
  void grant_waiting();
  bool given_up(int target);  // a request to target was given up and its answer is still due
  std::shared_ptr<Communicator> comm_;
  uint32_t window_;
  Where where_;
  std::unique_ptr<std::atomic<uint64_t>[]> notices_;  // posts then completes seen, by sender
  std::unique_ptr<std::atomic<int>[]> grant_;         // per target: 0 waiting, 1 granted, 2 denied
  std::mutex grant_mutex_;                            // orders a late grant against giving up on it
  std::vector<uint8_t> abandoned_;                    // per target: a request given up, grant to return
  std::unique_ptr<std::byte[]> queue_memory_;         // this rank's lock queue
  LockQueue* queue_ = nullptr;
  std::vector<Riding> riding_;               // per target (origin side; the caller's thread)
  std::vector<std::vector<HeldCall>> held_;  // per origin (target side; the service)
  std::vector<uint8_t> carried_;             // per origin: its waiting request came in a call
  std::vector<HeldCall> released_;           // held calls whose origins were granted
};

}  // namespace rma
