#include "window/route_fabric.hpp"

#include <cstring>

#include "base/errors.hpp"
#include "base/wire.hpp"
#include "runtime/runtime.hpp"
#include "window/sync_strategy.hpp"
#include "window/window.hpp"  // the window message ids

namespace rma {

Bytes window_wire::header(uint32_t window, uint64_t request) {
  Bytes message;
  message.reserve(64);  // the header, and room for a small request's body
  wire::append<uint32_t>(message, window);
  wire::append<uint64_t>(message, request);
  return message;
}

bool window_wire::covers(const std::vector<std::pair<uint64_t, uint64_t>>& attachments, int64_t low, int64_t high) {
  for (const auto& [address, bytes] : attachments) {
    if (low >= static_cast<int64_t>(address) && high <= static_cast<int64_t>(address + bytes)) return true;
  }
  return false;
}

FabricRoute::FabricRoute(std::shared_ptr<Communicator> comm, uint32_t window,
                         const std::vector<RegionDescriptor>& peers, bool dynamic, Where where)
    : Route(false, false),
      comm_(std::move(comm)),
      window_(window),
      peers_(peers),
      dynamic_(dynamic),
      one_sided_(comm_->runtime().transport().one_sided()),
      where_(std::move(where)),
      known_attachments_(peers.size()),
      outstanding_to_(new std::atomic<int64_t>[peers.size()]),
      carry_(peers.size(), 0),
      behind_(peers.size(), 0) {
  for (size_t r = 0; r < peers.size(); ++r) outstanding_to_[r] = 0;
}

bool FabricRoute::native(const Region& region) const {
  // A one-sided fabric write or read makes the target's provider work (shm and tcp progress
  // at the target) without the target seeing a completion, so its progress engine takes itself
  // for idle and sleeps between polls: a lone small put then waits for a wake-up (~0.5 ms
  // measured). A message does show as activity, so small transfers travel as messages and
  // large ones, where bandwidth counts, as native RMA.
  return one_sided_ && region.is_contiguous() && !dynamic_ && region.bytes() >= kNativeMinimumBytes;
}

std::vector<Region> FabricRoute::message_pieces(const Region& region) const { return region.pieces(kPieceBytes); }

void FabricRoute::epoch_ended_unanswered() {
  for (size_t target = 0; target < behind_.size(); ++target) {
    if (outstanding_to_[target].load() != 0) behind_[target] = 1;
  }
}

void FabricRoute::await_earlier(int target, const char* call) {
  if (!behind_[target]) return;
  std::vector<int> watch{comm_->members()[target]};
  comm_->runtime().transport().wait_until(
      [&] { return outstanding_to_[target].load() == 0; }, comm_->runtime().deadline(), watch,
      [&] { return where_(call, target) + " (waiting for the calls of the epoch before to reach it)"; });
  behind_[target] = 0;
}

void FabricRoute::put(int target, const void* data, const Region& region) {
  if (native(region)) {
    await_earlier(target, "put");
    comm_->runtime().transport().write(comm_->members()[target], data, region.bytes(),
                                       RemoteAddress{peers_[target], region.offset()});
    return;
  }
  // A small or strided region: one message that the target scatters.
  Bytes message = apply_request(window_wire::Kind::Copy, ReduceOp::Replace, ElementType::Bytes, region);
  send_request("put", kWindowApply, target, message, {static_cast<const std::byte*>(data), region.bytes()}, nullptr, 0);
}

void FabricRoute::get(int target, void* out, const Region& region) {
  if (native(region)) {
    await_earlier(target, "get");
    comm_->runtime().transport().read(comm_->members()[target], out, region.bytes(),
                                      RemoteAddress{peers_[target], region.offset()});
    return;
  }
  Bytes message = window_wire::header(window_, new_request());
  region.append_to(message);
  send_request("get", kWindowRead, target, message, {}, out, region.bytes());
}

void FabricRoute::accumulate(const char* call, int target, ReduceOp op, ElementType type, const void* data,
                             void* result, const Region& region) {
  // Every accumulate travels as a message that the target's service applies (one at a time,
  // under the accumulate lock where ranks of its host map its memory), so one mechanism serves
  // every op and type.
  auto kind = result ? window_wire::Kind::FetchAccumulate : window_wire::Kind::Accumulate;
  Bytes message = apply_request(kind, op, type, region);
  std::span<const std::byte> operand;  // (NoOp takes none)
  if (op != ReduceOp::NoOp) operand = {static_cast<const std::byte*>(data), region.bytes()};
  send_request(call, kWindowApply, target, message, operand, result, result ? region.bytes() : 0);
}

void FabricRoute::compare_and_swap(int target, ElementType type, const void* data, const void* compare, void* result,
                                   const Region& region) {
  Bytes message = apply_request(window_wire::Kind::CompareSwap, ReduceOp::Replace, type, region);
  auto operand = static_cast<const std::byte*>(data);
  auto comparand = static_cast<const std::byte*>(compare);
  message.insert(message.end(), operand, operand + region.bytes());
  message.insert(message.end(), comparand, comparand + region.bytes());
  send_request("compare_and_swap", kWindowApply, target, message, {}, result, region.bytes());
}

Bytes FabricRoute::apply_request(window_wire::Kind kind, ReduceOp op, ElementType type, const Region& region) {
  // What Window::serve_apply parses: the header, kind, op, element type and region; the
  // caller appends the data.
  Bytes message = window_wire::header(window_, new_request());
  wire::append<uint8_t>(message, static_cast<uint8_t>(kind));
  wire::append<uint8_t>(message, static_cast<uint8_t>(op));
  wire::append<uint8_t>(message, static_cast<uint8_t>(type));
  region.append_to(message);
  return message;
}

void FabricRoute::send_request(const char* call, uint16_t handler, int target, const Bytes& message,
                               std::span<const std::byte> data, void* reply_to, size_t reply_bytes, bool attachments) {
  uint64_t request;
  std::memcpy(&request, message.data() + 4, sizeof request);
  uint8_t lock_type = std::exchange(carry_[target], 0);
  {
    // Recorded before sending: the reply may come before send() returns.
    std::lock_guard lock(pending_mutex_);
    pending_[request] = Pending{reply_to, reply_bytes, target, call, lock_type != 0};
    if (attachments) attachment_requests_.insert(request);
  }
  ++outstanding_;
  ++outstanding_to_[target];
  if (reply_to != nullptr) ++fetching_;
  try {
    if (lock_type != 0) {
      // What Window::serve_locked_call parses: the window, the lock's type, the call's handler,
      // then the call's own message.
      Bytes locked;
      locked.reserve(7 + message.size());
      wire::append<uint32_t>(locked, window_);
      wire::append<uint8_t>(locked, lock_type);
      wire::append<uint16_t>(locked, handler);
      locked.insert(locked.end(), message.begin(), message.end());
      comm_->runtime().transport().send(comm_->members()[target], kWindowLockedCall, MessageParts{locked, data});
      return;
    }
    comm_->runtime().transport().send(comm_->members()[target], handler, MessageParts{message, data});
  } catch (...) {
    std::lock_guard lock(pending_mutex_);
    forget(request, target);
    throw;
  }
}

void FabricRoute::forget(uint64_t request, int target) {
  auto found = pending_.find(request);
  if (found != pending_.end()) {
    if (found->second.out != nullptr) --fetching_;
    pending_.erase(found);
    attachment_requests_.erase(request);
    --outstanding_;
    --outstanding_to_[target];
  }
}

bool FabricRoute::attached(int target, int64_t low, int64_t high) {
  if (low < 0) return false;
  if (window_wire::covers(known_attachments_[target], low, high)) return true;
  // Not in what we knew: ask the target for its attachments now (they change without notice).
  uint64_t request = new_request();
  Bytes answer;
  send_request("attachments query", kWindowAttachments, target, window_wire::header(window_, request), {}, &answer, 0,
               true);
  try {
    std::vector<int> watch{comm_->members()[target]};
    comm_->runtime().transport().wait_until(
        [&] {
          std::lock_guard lock(pending_mutex_);
          return pending_.count(request) == 0;
        },
        comm_->runtime().deadline(), watch, [&] { return where_("attachments query", target); });
  } catch (...) {
    // `answer` lives on this stack frame: a late reply must find no entry pointing to it.
    std::lock_guard lock(pending_mutex_);
    forget(request, target);
    throw;
  }
  Attachments table(answer.size() / 16);
  std::memcpy(static_cast<void*>(table.data()), answer.data(), table.size() * 16);
  known_attachments_[target] = std::move(table);
  return window_wire::covers(known_attachments_[target], low, high);
}

void FabricRoute::take_reply(std::span<const std::byte> message, size_t position) {
  auto request = wire::take<uint64_t>(message, position);
  bool refused = wire::take<uint8_t>(message, position) == static_cast<uint8_t>(window_wire::kRefused);
  Pending pending;
  {
    std::lock_guard lock(pending_mutex_);
    auto found = pending_.find(request);
    if (found == pending_.end())
      throw RmaError("rma: window " + std::to_string(window_) + ": a reply nobody waits for");
    pending = found->second;
    if (refused && refusal_.empty()) {
      refusal_ = "rma: " + where_(pending.call, pending.target) +
                 ": the target refused the region: it is not in memory exposed there (detached?)";
    }
    if (attachment_requests_.count(request)) {
      static_cast<Bytes*>(pending.out)->assign(message.begin() + position, message.end());
      forget(request, pending.target);
      return;
    }
    pending_.erase(found);
  }
  size_t length = message.size() - position;
  if (!refused && pending.out != nullptr && length == pending.bytes && length > 0) {
    std::memcpy(pending.out, message.data() + position, length);
  }
  // (The target serves a call that carried its lock request only once it granted the lock.)
  if (pending.carried_lock && grants_to_ != nullptr) grants_to_->grant_arrived(pending.target, 1);
  if (pending.out != nullptr) --fetching_;
  --outstanding_to_[pending.target];
  --outstanding_;
}

void FabricRoute::raise_refusal() {
  if (!dynamic_) return;  // only a dynamic window's targets refuse (memory detached meanwhile)
  std::string refusal;
  {
    std::lock_guard lock(pending_mutex_);
    refusal.swap(refusal_);
  }
  if (!refusal.empty()) throw RangeError(refusal);
}

}  // namespace rma
