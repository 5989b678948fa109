// A window: memory of each rank of a communicator that the others can put to, get from and
// accumulate into, inside epochs. The memory belongs to the caller (Python keeps it alive);
// the window registers it, exchanges its descriptor with every member, and tracks the epoch.
//
// Paths: contiguous put/get are one-sided fabric operations with delivery completion; strided
// regions and the whole accumulate family travel as one active message each, applied at the
// target with CPU atomics (window/reduce.hpp), so one mechanism serves every accumulate.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "runtime/communicator.hpp"
#include "runtime/transport.hpp"
#include "window/reduce.hpp"
#include "window/lock_queue.hpp"
#include "window/region.hpp"
#include "window/shared_control.hpp"
#include "window/window_messages.hpp"
#include "runtime/shared_segment.hpp"

namespace rma {

class WindowService;

// rma.Mode; the values are the Python flags'.
enum WindowMode : int {
  kModeNoCheck = 1,
  kModeNoStore = 2,
  kModeNoPut = 4,
  kModeNoPrecede = 8,
  kModeNoSucceed = 16,
};

// rma.LOCK_EXCLUSIVE and rma.LOCK_SHARED.
constexpr int kLockExclusive = kLockExclusiveType, kLockShared = kLockSharedType;

// A target rank meaning "nobody": the call is a no-op that still needs its epoch.
constexpr int kProcNull = -2;

class Window : public std::enable_shared_from_this<Window> {
 public:
  // Collective over comm. base/bytes: this rank's memory (bytes may be 0). label names the
  // window in error messages, e.g. "window 3 (float64, shape (10,))". same_host: every rank
  // of comm runs on this host, so synchronization goes through shared memory and puts and
  // gets copy straight between the processes (process_vm_writev/readv).
  static std::shared_ptr<Window> create(const Communicator& comm, void* base, uint64_t bytes,
                                        const std::string& label, bool same_host = false);
  // Collective: a dynamic window, which exposes the memory attach()ed later. Its regions'
  // offsets are the attached memory's addresses (what attach returns to Python).
  static std::shared_ptr<Window> create_dynamic(const Communicator& comm, const std::string& label);
  // Collective, every rank of comm on one host: a window over shared segments that every rank
  // maps; calls to any rank then move data with memcpy and CPU atomics, without the fabric.
  static std::shared_ptr<Window> create_shared(const Communicator& comm,
                                               std::shared_ptr<SharedSegment> local,
                                               const std::string& label);
  // A shared window's segment of `rank` (its memory as this process maps it); null otherwise.
  std::shared_ptr<SharedSegment> segment(int rank) const;

  // Dynamic windows: expose or withdraw [base, base + bytes) of this rank. Local calls.
  void attach(void* base, uint64_t bytes);
  void detach(void* base);
  ~Window();
  Window(const Window&) = delete;
  Window& operator=(const Window&) = delete;

  uint32_t id() const noexcept { return id_; }
  const std::string& label() const noexcept { return label_; }
  int rank() const noexcept { return comm_->rank(); }
  int size() const noexcept { return comm_->size(); }
  uint64_t target_bytes(int rank) const;
  bool freed() const noexcept { return freed_; }
  // UsageError naming the call unless rank is a rank of the window (or kProcNull, when
  // allow_null): the one rank rule every entrance applies before anything else.
  void check_rank(const char* call, int64_t rank, bool allow_null) const;
  // "win.put to rank 1 on rank 0 of window 3 (...)": how messages name a call (target < 0: none).
  std::string where(const char* call, int target) const;

  // Communication calls; target is a rank of the window's communicator or kProcNull. The
  // region is checked against the target's size (RangeError). Local buffers hold the region's
  // elements contiguously, in C order, and stay alive until the epoch's synchronization.
  void put(int target, const void* data, const Region& region);
  void get(int target, void* out, const Region& region);
  void accumulate(int target, ReduceOp op, ElementType type, const void* data, const Region& region);
  void get_accumulate(int target, ReduceOp op, ElementType type, const void* data, void* result,
                      const Region& region);
  void compare_and_swap(int target, ElementType type, const void* data, const void* compare,
                        void* result, const Region& region);

  // The direct path alone (window_direct.cpp), which the calls above try first and Python's
  // fast path calls itself: a shared
  // window, one contiguous run of `bytes` bytes at byte `offset` of target's memory, an epoch
  // that admits the call without waiting. True when done (complete at target, like every
  // direct call); false, with nothing done or counted, when the call needs the general path
  // above, which also raises the errors.
  bool put_direct(int target, const void* data, uint64_t offset, uint64_t bytes);
  bool get_direct(int target, void* out, uint64_t offset, uint64_t bytes);
  bool get_accumulate_direct(int target, ReduceOp op, ElementType type, const void* data,
                             void* result, uint64_t offset, uint64_t bytes);
  bool compare_and_swap_direct(int target, ElementType type, const void* data, const void* compare,
                               void* result, uint64_t offset);
  // flush(target) when nothing to target can be in flight (every call so far was direct).
  bool flush_direct(int target);

  // Collective: completes every operation of the ending epoch (at origin and target), then
  // opens a new access and exposure epoch unless mode has kModeNoSucceed.
  void fence(int mode);
  // Collective. EpochError if communication calls are waiting for their synchronization.
  void free();

  // General active target. group: ranks of the window's communicator, distinct.
  // post: open an exposure epoch for the origins in group (local; tells them).
  void post(const std::vector<int>& group, int mode);
  // start: open an access epoch to the targets in group. Local: calls to a target wait for
  // its post, so no data reaches a target before its exposure epoch.
  void start(const std::vector<int>& group, int mode);
  // complete: end the access epoch: every call completed at origin and target, then tell them.
  void complete();
  // wait: end the exposure epoch once every origin of the post group has completed.
  void wait();
  // test: wait() if it would not block and return true, else false.
  bool test();

  // Passive target. type: kLockExclusive or kLockShared. lock waits for the grant; the
  // target's lock manager grants in arrival order (a waiting exclusive request holds back
  // later shared ones, so nobody starves). kModeNoCheck skips acquisition.
  void lock(int target, int type, int mode);
  // A lock granted only if it can be at once (at the head of an empty queue): false if not.
  bool try_lock(int target, int type);
  void unlock(int target);          // completes this epoch's calls to target, then releases
  void lock_all(int mode);          // a shared lock on every rank
  void unlock_all();
  void flush(int target);           // completes the calls to target, at origin and target
  void flush_all();
  // Whether every call to target has completed (makes one pass of progress; never waits).
  bool target_idle(int target);
  // Whether a passive-target epoch permits calls to target (kProcNull: any passive epoch).
  bool in_passive_epoch(int target) const;

  // Target side, called by WindowService from the progress engine.
  void serve_apply(int source, std::span<const std::byte> message, size_t position);
  void serve_read(int source, std::span<const std::byte> message, size_t position);
  void take_reply(std::span<const std::byte> message, size_t position);
  void serve_attachments(int source, std::span<const std::byte> message, size_t position);
  void note_post(int source, std::span<const std::byte> message, size_t position);
  void note_complete(int source, std::span<const std::byte> message, size_t position);
  void serve_lock(int source, std::span<const std::byte> message, size_t position);
  void serve_unlock(int source, std::span<const std::byte> message, size_t position);
  void note_grant(int source, std::span<const std::byte> message, size_t position);

 private:
  enum class Kind : uint8_t { Copy, Accumulate, FetchAccumulate, CompareSwap };
  // Contiguous transfers from this size on use native RMA; smaller ones travel as messages.
  static constexpr uint64_t kNativeMinimumBytes = 16 * 1024;
  bool native(const Region& region) const;
  using Attachments = std::vector<std::pair<uint64_t, uint64_t>>;  // (address, bytes)

  Window(std::shared_ptr<Communicator> comm, WindowService& service, uint32_t id, void* base,
         uint64_t bytes, std::string label);
  static std::shared_ptr<Window> establish(const Communicator& comm, void* base, uint64_t bytes,
                                           const std::string& label, bool dynamic,
                                           std::shared_ptr<SharedSegment> segment = nullptr,
                                           bool same_host = false);
  // Whether the epoch admits a call to [offset, offset + bytes) of target at once, which
  // lies inside (then counted); false for the general path.
  bool admit_quick(int target, uint64_t offset, uint64_t bytes);
  bool counted(bool done);  // after admit_quick: uncounts the call if it was not done
  // Where a direct call may write: target's mapped memory + offset, if admit_quick; else null.
  std::byte* admit_direct(int target, uint64_t offset, uint64_t bytes);
  // A same-host window over the caller's memory: copies region between local (contiguous) and
  // target's memory with one process_vm_writev/readv; false, having copied nothing, if the
  // kernel refuses (then target is reached through the fabric from now on).
  bool vm_reachable(int target) const { return !vm_ok_.empty() && vm_ok_[target]; }
  bool vm_copy(bool is_write, int target, void* local, const Region& region);
  // target's memory as mapped here (a shared window), or null: use the fabric.
  std::byte* direct(int target) const;
  // Whether [low, high) of target's window is exposed (dynamic: inside one attachment,
  // asking the target once more when the cached table does not cover it).
  bool exposes(int target, int64_t low, int64_t high);
  // Whether [low, high) of this rank's memory is exposed to a peer's request (for a dynamic
  // window, with attachments_mutex_ held).
  bool exposes_locally(int64_t low, int64_t high) const;
  // A wait for one of the control block's spin locks is taking long: PeerError if a rank died.
  void stalled(const char* what);
  std::byte* local_address(uint64_t offset);
  // Access and exposure epochs.
  void check_mode(int mode, const char* call) const;  // UsageError unless rma.Mode flags
  void check_group(const std::vector<int>& group, const char* call) const;
  void leave_idle_fence(const char* call);
  void consume_post(int target, const char* call);
  bool exposure_done() const;
  void notify(uint16_t handler, const std::vector<int>& ranks);
  std::string ranks_text(const std::vector<int>& ranks) const;
  int rank_of_world(int world_rank) const;
  // Passive target.
  bool passive_access(int target) const { return lock_all_ || held_[target] != 0; }
  bool request_lock(int target, int type, bool try_only, const char* call);
  // A shared window's locks: queue in the target's control block and wait for the grant word
  // (returns it: 1 granted, 2 refused); release_from leaves a queue and grants the next.
  int request_shared_lock(int target, int type, bool try_only, const char* call);
  void release_from(LockQueue& queue, int target);
  void grant_from(LockQueue& queue, int target);  // grants what the queue can, and tells them
  // The bell this rank sleeps on while it waits for a shared-memory condition (else null).
  Bell* own_bell() { return control_ ? &control_->bell(rank()) : nullptr; }
  void release(int target);
  void send_unlock(int target);  // releases target's lock (a message, or in shared memory)
  void complete_target(int target, const char* call);
  void grant_waiting();
  // EpochError unless an access epoch permits a call to target; RangeError if region is out.
  // Returns false for kProcNull (nothing to do).
  bool admit(const char* call, int target, const Region& region);
  void send_request(const char* call, uint16_t handler, int target, Bytes message, void* reply_to,
                    size_t reply_bytes);
  void refuse(int source, Bytes reply);
  void raise_refusal();  // throws RangeError if a target refused one of our requests
  Bytes request_header(uint64_t request) const;
  Bytes apply_request(Kind kind, ReduceOp op, ElementType type, const Region& region);
  void complete_all(const char* call);

  std::shared_ptr<Communicator> comm_;
  WindowService& service_;
  uint32_t id_;
  void* base_;
  uint64_t bytes_;
  std::string label_;
  std::unique_ptr<LocalRegion> registration_;
  std::vector<RegionDescriptor> peers_;  // by rank of comm_
  std::vector<std::shared_ptr<SharedSegment>> segments_;  // a shared window's, by rank
  std::unique_ptr<SharedControl> control_;  // synchronization in shared memory (same-host windows)
  std::vector<int> pids_;                   // a same-host create() window: each rank's process
  std::vector<uint64_t> remote_bases_;      // ... its memory's address there
  std::vector<uint8_t> vm_ok_;              // ... and whether process_vm_* reaches it
  bool dynamic_ = false;
  std::mutex attachments_mutex_;
  Attachments attachments_;                 // this rank's, for a dynamic window
  std::vector<Attachments> known_attachments_;  // the peers', as last asked

  // Epoch state: only the caller's thread changes it (the notice counters excepted).
  bool fence_epoch_ = false;
  bool access_open_ = false, access_nocheck_ = false;
  std::vector<int> access_group_;
  std::vector<char> in_access_group_, post_matched_;  // by rank, for the open access epoch
  bool exposure_open_ = false, exposure_nocheck_ = false;
  std::vector<int> exposure_group_;
  // Notices are counted per peer: a post for the next epoch may arrive before this one ends.
  // A shared window's counters live in its control block, where the senders add to them.
  std::unique_ptr<std::atomic<uint64_t>[]> notice_counters_;  // otherwise here: 2 x size
  std::atomic<uint64_t>*posts_seen_ = nullptr, *completes_seen_ = nullptr;
  std::vector<uint64_t> posts_used_, completes_used_;
  // Passive target, origin side: the lock held on each target (0, kLockExclusive, kLockShared)
  // and whether it was taken without acquisition (NOCHECK).
  std::vector<uint8_t> held_, held_nocheck_;
  bool lock_all_ = false, lock_all_nocheck_ = false;
  std::unique_ptr<std::atomic<int>[]> grant_;  // per target: 0 waiting, 1 granted, 2 denied
  std::mutex grant_mutex_;                     // orders a late grant against giving up on it
  std::vector<uint8_t> abandoned_;             // per target: a request given up, grant to return
  // Passive target, target side, for lock messages (touched only while dispatching messages,
  // one at a time). A shared window's queue is in its control block instead.
  std::unique_ptr<std::byte[]> lock_queue_memory_;
  LockQueue* lock_queue_ = nullptr;
  // Message calls per target not yet answered, for flush(target) and target_idle.
  std::unique_ptr<std::atomic<int64_t>[]> outstanding_to_;
  uint64_t calls_since_sync_ = 0;
  bool freed_ = false;

  // Active-message requests waiting for their reply: id -> where the reply's data goes.
  struct Pending {
    void* out;
    size_t bytes;
    int target;
    const char* call;
  };
  static constexpr std::byte kAccepted{0}, kRefused{1};  // first byte of a reply's body
  std::string refusal_;  // the first refusal since the last synchronization
  std::mutex pending_mutex_;
  std::unordered_map<uint64_t, Pending> pending_;
  std::unordered_set<uint64_t> attachment_requests_;  // pending_ entries answering exposes()
  std::atomic<uint64_t> next_request_{1};
  std::atomic<uint64_t> outstanding_{0};
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

 private:
  std::shared_ptr<Window> find(uint32_t id);
  Runtime& runtime_;
  std::mutex mutex_;
  std::unordered_map<uint32_t, std::weak_ptr<Window>> windows_;
  std::atomic<uint32_t> next_id_{1};
};

}  // namespace rma
