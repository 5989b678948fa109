// Reaching a target through libfabric: contiguous put/get from kNativeMinimumBytes on are
// one-sided fabric operations (delivery completion at the next flush); everything else, and
// every call on a dynamic window, is an active message that the target applies and answers
// (window/target_side.cpp serves them): one, or pieces of one fragment each (message_pieces).
// This route keeps the requests waiting for their answer, counted per target, which is what
// completing an epoch waits for.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "base/transport.hpp"
#include "messages/message_assembler.hpp"
#include "runtime/communicator.hpp"
#include "window/route.hpp"

namespace rma {

class MessageSync;

// The wire format shared by the origin (FabricRoute) and the target (Window::serve_*).
namespace window_wire {
enum class Kind : uint8_t { Copy, Accumulate, FetchAccumulate, CompareSwap };  // of an apply request
constexpr std::byte kAccepted{0}, kRefused{1};                                 // first byte of a reply's body
// Every request and reply starts with the window id and the request id.
Bytes header(uint32_t window, uint64_t request);
// Whether [low, high) lies inside one of attachments (address, bytes).
bool covers(const std::vector<std::pair<uint64_t, uint64_t>>& attachments, int64_t low, int64_t high);
}  // namespace window_wire

class FabricRoute final : public Route {
 public:
  // peers: every rank's registered memory, by rank (outlives this). dynamic: a dynamic
  // window (offsets are addresses; messages only; the target's attachments decide the range).
  FabricRoute(std::shared_ptr<Communicator> comm, uint32_t window, const std::vector<RegionDescriptor>& peers,
              bool dynamic, Where where);

  void put(int target, const void* data, const Region& region) override;
  void get(int target, void* out, const Region& region) override;
  void accumulate(const char* call, int target, ReduceOp op, ElementType type, const void* data, void* result,
                  const Region& region) override;
  void compare_and_swap(int target, ElementType type, const void* data, const void* compare, void* result,
                        const Region& region) override;

  // region as the messages of a call that is not native: one, or pieces of kPieceBytes at
  // most, in the order of the origin's elements. The target serves each piece as it comes,
  // while the next ones are still on the wire, instead of after the whole message arrived
  // (each fragment copied into it, then every element applied in one go). MPI asks no more of
  // one call: an accumulate is atomic per element, and the pieces, calls of their own from one
  // origin, are served in the order they were sent.
  std::vector<Region> message_pieces(const Region& region) const;
  // Whether a call of region goes whole: native, or one message (no cut, and no vector made
  // for it: every small call asks).
  bool goes_whole(const Region& region) const { return native(region) || region.bytes() <= kPieceBytes; }
  // Whether a put or get of region is a one-sided fabric write or read (else a message).
  bool native(const Region& region) const;

  // The next request to target carries a lock request of type (MessageSync::before_call): it
  // travels as kWindowLockedCall, and its reply grants the lock.
  void carry_lock(int target, int type) { carry_[target] = static_cast<uint8_t>(type); }

  // Whether it moves data with the fabric's write and read (else only messages, through the
  // inboxes of a job on one host that opened no endpoint: Transport::one_sided).
  bool one_sided() const noexcept { return one_sided_; }

  // A dynamic window: whether [low, high) lies inside one of target's attachments, asking the
  // target once more (and waiting for its answer) when the table known here does not cover it.
  bool attached(int target, int64_t low, int64_t high);

  // Requests not yet answered, in all and per target (any thread may read them).
  uint64_t outstanding() const noexcept { return outstanding_.load(); }
  int64_t outstanding_to(int target) const noexcept { return outstanding_to_[target].load(); }
  // Of those, the requests whose reply brings data to this rank (get, the fetching
  // accumulates, compare_and_swap, attachment queries): an epoch that ends with messages
  // behind its calls still waits for these (Window::complete_calls).
  uint64_t fetching() const noexcept { return fetching_.load(); }
  // An epoch ended with requests unanswered (Window::complete_calls, followed): they reach
  // their targets' services in order, behind the epoch's end, but a native write or read does
  // not go through the service and could overtake them (read memory they have yet to write,
  // or be overwritten by them). So the next native call to such a target first waits for
  // their answers (await_earlier); calls by message keep their order anyway.
  void epoch_ended_unanswered();
  // The origin side of a reply (the progress engine's thread): stores its data, ends the request.
  // RmaError for a reply nobody waits for.
  // A reply to a request that carried a lock request is that lock's grant, told to `sync`
  // (the window's MessageSync) before the request counts as answered.
  void take_reply(std::span<const std::byte> message, size_t position);
  void grants_to(MessageSync* sync) { grants_to_ = sync; }
  // RangeError if a target refused a request since the last call (memory detached meanwhile).
  void raise_refusal();

 private:
  struct Pending {
    void* out;
    size_t bytes;
    int target;
    const char* call;
    bool carried_lock = false;  // its message carried target's lock request
  };
  using Attachments = std::vector<std::pair<uint64_t, uint64_t>>;  // (address, bytes)
  // Contiguous transfers from this size on use native RMA (where the transport has it: not in
  // a job on one host that opened no libfabric endpoint); smaller ones travel as messages.
  static constexpr uint64_t kNativeMinimumBytes = 16 * 1024;
  // A call by message larger than this goes as pieces of at most this many bytes, each its own
  // message of one fragment (room left for the call's header and region): see message_pieces.
  static constexpr uint64_t kPieceBytes = kFragmentPayload - 2048;
  uint64_t new_request() { return next_request_++; }
  Bytes apply_request(window_wire::Kind kind, ReduceOp op, ElementType type, const Region& region);
  // Records the request (its reply goes to reply_to), then sends it: message, then the
  // caller's data (sent from where it is, not copied into message first); nothing recorded if
  // the send throws.
  void send_request(const char* call, uint16_t handler, int target, const Bytes& message,
                    std::span<const std::byte> data, void* reply_to, size_t reply_bytes, bool attachments = false);
  void forget(uint64_t request, int target);         // with pending_mutex_ held
  void await_earlier(int target, const char* call);  // see epoch_ended_unanswered

  std::shared_ptr<Communicator> comm_;
  uint32_t window_;
  const std::vector<RegionDescriptor>& peers_;
  bool dynamic_;
  bool one_sided_;  // the transport's write and read are there (Transport::one_sided)
  Where where_;
  std::vector<Attachments> known_attachments_;  // the peers', as last asked
  std::mutex pending_mutex_;
  std::unordered_map<uint64_t, Pending> pending_;
  std::unordered_set<uint64_t> attachment_requests_;  // pending_ entries answering attached()
  std::string refusal_;                               // the first refusal since raise_refusal
  std::atomic<uint64_t> next_request_{1};
  std::atomic<uint64_t> outstanding_{0};
  std::atomic<uint64_t> fetching_{0};
  std::unique_ptr<std::atomic<int64_t>[]> outstanding_to_;
  std::vector<uint8_t> carry_;   // per target: the lock type the next request carries (caller's thread)
  std::vector<uint8_t> behind_;  // per target: requests of an ended epoch unanswered (caller's thread)
  MessageSync* grants_to_ = nullptr;
};

}  // namespace rma
