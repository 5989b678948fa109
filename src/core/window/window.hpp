// A window: memory of each rank of a communicator that the others can put to, get from and
// accumulate into, inside epochs. The memory belongs to the caller (Python keeps it alive);
// the window registers it, exchanges its descriptor with every member, and tracks the epoch.
//
// A window is four parts, each behind its own header:
//   window/epochs.hpp         the epoch rules: which calls the open epochs admit, every EpochError;
//   window/route.hpp          how each target's memory is reached (mapped, process_vm, the
//                             fabric), chosen per target when the window is created;
//   window/sync_strategy.hpp  how the ranks synchronize (shared control blocks, or messages);
//   window/target_side.cpp    the target side: requests and notices from other ranks.
// Each communication call (data_calls.cpp) is "admit (epoch + range), then the target's route
// moves the data"; each epoch method (epoch_calls.cpp) is "check with the epochs, complete the
// calls, synchronize, tell the epochs".
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/transport.hpp"
#include "elements/reduce.hpp"
#include "elements/region.hpp"
#include "host/shared_segment.hpp"
#include "runtime/communicator.hpp"
#include "window/control_pool.hpp"
#include "window/creation_failure.hpp"
#include "window/epochs.hpp"
#include "window/lock_queue.hpp"
#include "window/route.hpp"
#include "window/segment_pool.hpp"
#include "window/window_messages.hpp"

namespace rma {

class WindowService;

// rma.LOCK_EXCLUSIVE and rma.LOCK_SHARED.
constexpr int kLockExclusive = kLockExclusiveType, kLockShared = kLockSharedType;

class FabricRoute;
class MessageSync;
class SharedControl;
class Sync;

class Window : public std::enable_shared_from_this<Window> {
 public:
  // Collective over comm. base/bytes: this rank's memory (bytes may be 0). label names the
  // window in error messages, e.g. "window 3 (float64, shape (10,))". near: the ranks of comm
  // on this host reach each other without the fabric: puts and gets copy straight between the
  // processes (process_vm_writev/readv), and when every rank of comm is on this host they
  // synchronize in shared memory (false: RMA_TRANSPORT=libfabric, every peer through the fabric).
  // call: the user's call, which errors during creation name ("Window.allocate"). note: bytes
  // of this rank's own that every member gets (notes()), gathered with what creation exchanges
  // anyway (the Python layer's shapes and dtypes), so that they cost no collective of their own.
  static std::shared_ptr<Window> create(const Communicator& comm, void* base, uint64_t bytes, const std::string& label,
                                        bool near = false, const std::string& call = "window creation",
                                        const std::string& note = {});
  // Collective: a dynamic window, which exposes the memory attach()ed later. Its regions'
  // offsets are the attached memory's addresses (what attach returns to Python).
  static std::shared_ptr<Window> create_dynamic(const Communicator& comm, const std::string& label,
                                                const std::string& call = "window creation",
                                                const std::string& note = {});
  // Collective: a window over shared segments that the ranks of each host map; calls to a rank
  // of this host then move data with memcpy and plain loops under the target's accumulate
  // lock, calls to other hosts go through the fabric, and the target applies their
  // accumulates under that same lock. Every rank of comm on this host: they synchronize in
  // shared memory too. Each rank's segment of `bytes` is made here, inside the collective call
  // (segment(rank()) is this rank's memory then): from this runtime's SegmentPool when pooled
  // (Window.allocate), else a new one (Window.allocate_shared). A rank that cannot have its
  // memory (OutOfMemoryError: /dev/shm or memory too small, no mapping left) makes every rank
  // raise (CreationFailure).
  static std::shared_ptr<Window> create_shared(const Communicator& comm, uint64_t bytes, bool pooled,
                                               const std::string& label, const std::string& call = "window creation",
                                               const std::string& note = {});
  // How many windows of this process are open (made, not yet freed), named when a limit is met.
  static uint64_t open_windows() noexcept;
  // Every member's note given at creation, by rank.
  const std::vector<std::string>& notes() const noexcept { return notes_; }
  // A shared window's segment of `rank` (its memory as this process maps it); null otherwise
  // (and for a rank on another host).
  std::shared_ptr<SharedSegment> segment(int rank) const;
  // How this rank reaches `rank` now: "shared-memory" (mapped memory, process_vm, or messages
  // through the inboxes in a job on one host that opened no libfabric endpoint) or
  // "libfabric". UsageError for a rank outside the window.
  const char* reach_name(int rank) const;

  // Dynamic windows: expose or withdraw [base, base + bytes) of this rank. Local calls.
  void attach(void* base, uint64_t bytes);
  void detach(void* base);
  ~Window();  // (out of line: the parts are incomplete types here)
  Window(const Window&) = delete;
  Window& operator=(const Window&) = delete;

  uint32_t id() const noexcept { return id_; }
  const std::string& label() const noexcept { return epochs_.label(); }
  int rank() const noexcept { return comm_->rank(); }
  // A rank of the window as the job's rank (kProcNull and other negatives as they are).
  int job_rank(int rank) const { return rank < 0 ? rank : comm_->members()[rank]; }
  int size() const noexcept { return comm_->size(); }
  uint64_t target_bytes(int rank) const;
  bool freed() const noexcept { return epochs_.freed(); }
  // Whether peers may still reach this rank's memory: not freed, and the runtime still up.
  bool exposed() const noexcept { return !freed() && comm_->runtime().active(); }
  // UsageError naming the call unless rank is a rank of the window (or kProcNull, when
  // allow_null): the entrance's check before anything else (the epochs' one rule).
  void check_rank(const char* call, int64_t rank, bool allow_null) const { epochs_.check_rank(rank, call, allow_null); }
  // "win.put to rank 1 on rank 0 of window 3 (...)": how messages name a call (target < 0: none).
  std::string where(const char* call, int target) const { return epochs_.where(call, target); }

  // Communication calls: admit (epoch and range), then reach the target. target is a rank of
  // the window's communicator or kProcNull. Throw EpochError unless an open epoch admits the
  // call (Epochs::admit), RangeError if the region lies outside the target's window,
  // UsageError for a bad rank, ArgumentTypeError for an op that does not fit the type (or a
  // type compare_and_swap does not take), RmaError once freed. Local buffers hold the region's
  // elements contiguously, in C order, and stay alive until the epoch's synchronization.
  // call: the caller's name of the call ("fetch_and_op", "rput"...), for error messages.
  void put(int target, const void* data, const Region& region, const char* call = "put");
  void get(int target, void* out, const Region& region, const char* call = "get");
  void accumulate(int target, ReduceOp op, ElementType type, const void* data, const Region& region,
                  const char* call = "accumulate");
  void get_accumulate(int target, ReduceOp op, ElementType type, const void* data, void* result, const Region& region,
                      const char* call = "get_accumulate");
  void compare_and_swap(int target, ElementType type, const void* data, const void* compare, void* result,
                        const Region& region, const char* call = "compare_and_swap");

  // The direct path (data_calls.cpp): the quick form of the calls above, for a target
  // reached without the fabric (mapped memory; process_vm for put/get), one contiguous run of
  // `bytes` bytes at byte `offset` of target's memory, and an epoch that admits the call
  // without waiting. True when done (complete at target, like every direct call); false, with
  // nothing done or counted, when the call needs the general form above, which also raises
  // the errors. Callers try this first, with the GIL held (src/bindings/window_data_calls.cpp).
  bool put_direct(int target, const void* data, uint64_t offset, uint64_t bytes);
  bool get_direct(int target, void* out, uint64_t offset, uint64_t bytes);
  bool get_accumulate_direct(int target, ReduceOp op, ElementType type, const void* data, void* result, uint64_t offset,
                             uint64_t bytes);
  bool compare_and_swap_direct(int target, ElementType type, const void* data, const void* compare, void* result,
                               uint64_t offset);
  // flush(target) when nothing to target can be in flight (every call so far was direct);
  // false (nothing done) otherwise.
  bool flush_direct(int target);

  // The epoch methods below throw EpochError when the open epochs forbid them and UsageError
  // for bad modes, groups, ranks or lock types (the rules and texts: window/epochs.hpp), and
  // RmaError once freed; their waits throw PeerError, TimeoutError or Interrupted.
  //
  // Collective: completes every operation of the ending epoch (at origin and target), then
  // opens a new access and exposure epoch unless mode has kModeNoSucceed. `pass`, if given,
  // replaces the fence's barrier: a collective over the window's ranks that returns at none
  // before every rank entered it (RMA_CHECK's exchange of accesses, which is one already).
  void fence(int mode, const std::function<void()>& pass = {});
  // Collective. EpochError inside an epoch, or if communication calls are waiting for their
  // synchronization; RmaError if already freed. Every call after it raises RmaError.
  void free();

  // General active target. group: ranks of the window's communicator, distinct.
  // post: open an exposure epoch for the origins in group (local; tells them).
  void post(const std::vector<int>& group, int mode);
  // start: open an access epoch to the targets in group. Local: calls to a target wait for
  // its post, so no data reaches a target before its exposure epoch.
  void start(const std::vector<int>& group, int mode);
  // complete: end the access epoch: every call completed at origin and target, then tell them.
  void complete();
  // Waits for the post of every target of the access epoch that has not come yet (complete
  // does so first; RMA_CHECK reads the posts' clocks before complete). Outside one: nothing.
  void await_posts(const char* call);
  // wait: end the exposure epoch once every origin of the post group has completed.
  void wait();
  // test: wait() if it would not block and return true, else false.
  bool test();

  // Passive target. type: kLockExclusive or kLockShared. lock waits for the grant; the
  // target's lock manager grants in arrival order (a waiting exclusive request holds back
  // later shared ones, so nobody starves). kModeNoCheck skips acquisition. A lock on a rank
  // reached through the fabric (another host) is requested with the epoch's first call to it
  // and returns at once (MessageSync::defer_lock), unless at_once: then it waits for the grant
  // (rma.sync.Mutex, whose lock guards no call; RMA_CHECK, which reads the last holder's clock
  // once the lock is held).
  void lock(int target, int type, int mode, bool at_once = false);
  // A lock granted only if it can be at once (at the head of an empty queue): false if not.
  bool try_lock(int target, int type);
  void unlock(int target);                        // completes this epoch's calls to target, then releases
  void lock_all(int mode, bool at_once = false);  // a shared lock on every rank (as lock defers)
  void unlock_all();
  // Complete the calls to target (to every target), at origin and target; errors name call
  // (flush_local completes as much: its calls complete at both ends at once).
  void flush(int target, const char* call = "flush");
  void flush_all(const char* call = "flush_all");
  // Whether every call to target has completed (makes one pass of progress; never waits).
  // PeerError (naming call) if not, and target's rank died: they never will.
  bool target_idle(int target, const char* call);
  // Whether a passive-target epoch permits calls to target (kProcNull: any passive epoch).
  bool in_passive_epoch(int target) const;
  // Waits until done() holds, for a condition on this rank's own memory that other ranks'
  // calls make true (win.wait_until): progress goes on meanwhile. Throws PeerError when any
  // other rank of the window dies (any of them could have been the one to satisfy it),
  // TimeoutError after `timeout` seconds (< 0: none) or RMA_TIMEOUT, whichever comes first,
  // Interrupted at a SIGINT. what: the call, for the messages.
  void wait_local(const std::function<bool()>& done, double timeout, const std::function<std::string()>& what);
  // win.sync(): this rank's stores are visible to the others, and a wait_local of any rank
  // sleeping on its bell looks again (a plain store rings no bell).
  void sync();

  // Target side (window/target_side.cpp), called by WindowService from the progress engine.
  void serve_apply(int source, std::span<const std::byte> message, size_t position);
  void serve_read(int source, std::span<const std::byte> message, size_t position);
  void take_reply(std::span<const std::byte> message, size_t position);
  void serve_attachments(int source, std::span<const std::byte> message, size_t position);
  void note_post(int source, std::span<const std::byte> message, size_t position);
  void note_complete(int source, std::span<const std::byte> message, size_t position);
  void serve_lock(int source, std::span<const std::byte> message, size_t position);
  void serve_unlock(int source, std::span<const std::byte> message, size_t position);
  void serve_locked_call(int source, std::span<const std::byte> message, size_t position);
  void note_grant(int source, std::span<const std::byte> message, size_t position);

 private:
  using Attachments = std::vector<std::pair<uint64_t, uint64_t>>;  // (address, bytes)

  Window(std::shared_ptr<Communicator> comm, WindowService& service, uint32_t id, void* base, uint64_t bytes,
         std::string label);
  static std::shared_ptr<Window> establish(const Communicator& comm, void* base, uint64_t bytes,
                                           const std::string& label, const std::string& call, bool dynamic,
                                           const std::string& note, std::shared_ptr<SharedSegment> segment = nullptr,
                                           bool near = false, CreationFailure failure = {});
  Where namer() const;

  // ---- admission (data_calls.cpp) ----
  // The route to target, or null if target is not a rank of the window.
  Route* route_for(int target) const {
    return target >= 0 && static_cast<size_t>(target) < routes_.size() ? routes_[target] : nullptr;
  }
  // Whether the epoch admits a call to [offset, offset + bytes) of target at once, which
  // lies inside (then counted); false for the general path. The same rules as admit().
  [[gnu::always_inline]] inline bool admit_quick(int target, uint64_t offset, uint64_t bytes);
  // After admit_quick: uncounts the call if it was not done (the general path counts it).
  bool counted(bool done) {
    if (!done) epochs_.uncount();
    return done;
  }
  // EpochError unless an epoch permits a call to target; RangeError if region is out. Waits
  // for target's post in a start epoch. Returns false when there is nothing to move
  // (kProcNull, an empty region).
  bool admit(const char* call, int target, const Region& region);
  void await_post(int target, const char* call);
  // Whether a lock on target may ride its epoch's first call: a rank reached through the
  // fabric, not this one (a lock of its own window guards its loads and stores too).
  bool lock_may_ride(int target) const;
  // lock's and lock_all's acquisition of target's lock (once the epoch rules allowed it):
  // deferred where it may ride (unless at_once), else waited for. Whether it is held (or will be).
  bool acquire(int target, int type, bool at_once, const char* call);
  // Whether target's lock was deferred and its grant is not yet seen here (MessageSync).
  bool lock_ungranted(int target) const;
  // A call to target made by move() (native: a one-sided fabric write or read), after what a
  // deferred lock on target needs (MessageSync::before_call): its request carried by this call's
  // message, or sent first, or its grant awaited. A call that throws carried nothing.
  template <class Move>
  void ridden(int target, bool native, const char* call, Move&& move);
  // call(piece, bytes of the origin's data before it) for each message a call of region to
  // target travels as (FabricRoute::message_pieces); once with the whole region where the
  // call goes whole (FabricRoute::goes_whole), or does not go through the fabric route.
  template <class Call>
  void in_pieces(int target, const Region& region, Call&& call);
  // Whether [low, high) of target's window is exposed (dynamic: inside one attachment).
  bool exposes(int target, int64_t low, int64_t high);
  // PeerError naming target if its rank is known dead: a call to it would be lost (a shared
  // window's memory stays mapped after its owner died). One load while nobody died.
  void check_alive(const char* call, int target) const {
    if (peer_status_->any_dead()) check_dead(call, target);
  }
  void check_dead(const char* call, int target) const;

  // ---- the trace's epoch spans (RMA_TRACE; epoch_calls.cpp) ----
  // An epoch of kind ("fence", "access", "exposure", "lock exclusive", "lock shared",
  // "lock_all") opened or closed; target and group are the window's ranks (the trace holds
  // the job's). A no-op unless tracing.
  void trace_epoch(bool open, const char* kind, int target, const std::vector<int>& group) const;
  // A fence epoch that the opening of another kind (or free) closed.
  void trace_fence_closed(bool was_open) const {
    if (was_open && !epochs_.fence_open()) trace_epoch(false, "fence", -1, all_ranks_);
  }

  // ---- completion (epoch_calls.cpp) ----
  // Every call to targets (and every message request) completed at origin and target; or,
  // followed: the messages that end the epoch follow its calls and complete them at the
  // target (Sync::barrier_follows_calls), so only those whose replies bring data here.
  void complete_calls(const char* call, const std::vector<int>& targets, bool followed = false);
  void complete_target(int target, const char* call);
  bool exposure_done() const;
  // Completes target's calls, then gives its lock back; errors name call (unlock, unlock_all).
  void release(int target, const char* call);

  // ---- target side (target_side.cpp) ----
  // Whether [low, high) of this rank's memory is exposed to a peer's request (for a dynamic
  // window, with attachments_mutex_ held).
  bool exposes_locally(int64_t low, int64_t high) const;
  std::byte* local_address(uint64_t offset);
  std::unique_lock<std::mutex> hold_attachments();  // a dynamic window's, while serving a request
  // Whether region is exposed here: then appends kAccepted to reply, else sends reply refused.
  bool accept(int source, const Region& region, Bytes& reply);
  int rank_of_world(int world_rank) const;
  MessageSync& message_sync(const char* what);
  // A call from world rank source whose lock request waits here: held until the grant (true).
  bool held_for_lock(int source, uint16_t handler, std::span<const std::byte> message, size_t position);
  void serve_released();  // the held calls of origins just granted
  // serve_apply or serve_read, by handler (kWindowApply or kWindowRead).
  void serve_call(uint16_t handler, int source, std::span<const std::byte> message, size_t position);

  std::shared_ptr<Communicator> comm_;
  const PeerStatus* peer_status_;  // the runtime's: which ranks died
  WindowService& service_;
  uint32_t id_;
  void* base_;
  uint64_t bytes_;
  std::unique_ptr<LocalRegion> registration_;
  std::vector<RegionDescriptor> peers_;                   // by rank of comm_
  std::vector<std::shared_ptr<SharedSegment>> segments_;  // a shared window's, by rank
  std::vector<std::string> notes_;                        // given at creation, by rank
  std::shared_ptr<SharedSegment> control_block_;          // this rank's, of a same-host window
  std::vector<int> all_ranks_;                            // 0 .. size - 1
  bool dynamic_ = false;
  std::mutex attachments_mutex_;
  Attachments attachments_;  // this rank's, for a dynamic window

  Epochs epochs_;  // only the caller's thread uses it
  std::unique_ptr<Sync> sync_;
  MessageSync* message_sync_ = nullptr;  // sync_, when it is by messages (it serves lock messages)
  // The control blocks of a shared window whose ranks span hosts (a SharedSync has its own):
  // only the accumulate locks, which the target's service takes too.
  std::unique_ptr<SharedControl> host_control_;
  // The control blocks whose accumulate locks a shared window's accumulates take (SharedSync's
  // or host_control_), the target's service included; null for other windows.
  SharedControl* accumulate_control_ = nullptr;
  std::unique_ptr<FabricRoute> fabric_;     // every window has one: messages, dynamic windows, fallback
  std::unique_ptr<Route> same_host_route_;  // a same-host window's MappedRoute or VmRoute
  Routes routes_;                           // the route to each target
};

// The windows' message handlers, one per runtime: routes requests and replies by window id.
class WindowService {
 public:
  explicit WindowService(Runtime& runtime);
  Runtime& runtime() noexcept { return runtime_; }
  void add(uint32_t id, const std::shared_ptr<Window>& window);
  void remove(uint32_t id);
  // Window ids: each window's members agree on the largest next_id() among them.
  uint32_t next_id() const noexcept { return next_id_.load(); }
  void id_taken(uint32_t id) noexcept;
  ControlPool& controls() noexcept { return controls_; }
  SegmentPool& segments() noexcept { return segments_; }

 private:
  std::shared_ptr<Window> find(uint32_t id);
  Runtime& runtime_;
  std::mutex mutex_;
  std::unordered_map<uint32_t, std::weak_ptr<Window>> windows_;
  std::atomic<uint32_t> next_id_{1};
  ControlPool controls_;
  SegmentPool segments_;
};

}  // namespace rma
