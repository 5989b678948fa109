// The communication calls: admit (the epoch rules of window/epochs.hpp, and the range), then
// reach the target (window/route.hpp). The direct calls are the same two steps without
// waiting and without raising: the compiled window type tries them first with the GIL held
// (src/bindings/window_data_calls.cpp), ~30 ns of C++ each, then the general call. Anything
// unusual (a strided region, PROC_NULL, a post not yet seen, an error to raise, a target
// reached through the fabric, a kernel that refuses process_vm) returns false with nothing
// done or counted, and the general path takes the call from the start.
#include <atomic>
#include <cstddef>
#include <cstring>

#include "base/errors.hpp"
#include "runtime/runtime.hpp"
#include "window/route_fabric.hpp"
#include "window/route_mapped.hpp"
#include "window/sync_strategy.hpp"
#include "window/window.hpp"

namespace rma {

// ---- admission ----

inline bool Window::admit_quick(int target, uint64_t offset, uint64_t bytes) {
  // (target is a rank: the caller found its route.)
  // (A dead rank anywhere: the general path says whether it is this target.)
  if (bytes == 0 || !epochs_.admits(target) || !comm_->runtime().active() || peer_status_->any_dead()) return false;
  if (epochs_.awaits_post(target)) {
    // The first call to a target of a start epoch: its post must be here already (waiting
    // for it is the general path's business, without the GIL).
    if (!sync_->post_arrived(target)) return false;
    sync_->take_post(target);
    epochs_.post_matched(target);
  }
  uint64_t length = peers_[target].length;
  if (offset > length || bytes > length - offset) return false;
  epochs_.count();
  return true;
}

bool Window::admit(const char* call, int target, const Region& region) {
  epochs_.check_open(call);
  comm_->runtime().require_active(call);
  epochs_.admit(call, target);
  if (target == kProcNull) return false;
  check_alive(call, target);
  if (epochs_.awaits_post(target)) await_post(target, call);
  auto [low, high] = region.extent();
  if (region.elements() > 0 && !exposes(target, low, high)) {
    std::string window = dynamic_ ? "memory attached to the target's dynamic window"
                                  : "the target's window of " + std::to_string(peers_[target].length) + " bytes";
    throw RangeError("rma: " + epochs_.where(call, target) + ": the target region, bytes [" + std::to_string(low) +
                     ", " + std::to_string(high) + "), lies outside " + window);
  }
  return region.elements() > 0;
}

void Window::await_post(int target, const char* call) {
  std::vector<int> watch{comm_->members()[target]};
  comm_->runtime().transport().wait_until([&] { return sync_->post_arrived(target); }, comm_->runtime().deadline(),
                                          watch,
                                          [&] {
                                            return epochs_.where(call, target) + " in the access epoch of win.start(" +
                                                   Epochs::ranks_text(epochs_.access_group()) + ") (waiting for rank " +
                                                   std::to_string(target) + " to call win.post)";
                                          },
                                          sync_->bell());
  sync_->take_post(target);
  epochs_.post_matched(target);
}

bool Window::lock_may_ride(int target) const {
  return message_sync_ != nullptr && target != rank() && routes_[target] == fabric_.get();
}

bool Window::lock_ungranted(int target) const {
  return message_sync_ != nullptr && message_sync_->lock_ungranted(target);
}

template <class Move>
void Window::ridden(int target, bool native, const char* call, Move&& move) {
  int carried = lock_ungranted(target) ? message_sync_->before_call(target, native, call) : 0;
  if (carried == 0) return move();
  fabric_->carry_lock(target, carried);
  try {
    move();
  } catch (...) {
    // Nothing left (a send that throws leaves no trace): the next call carries the request.
    fabric_->carry_lock(target, 0);
    throw;
  }
  message_sync_->carried(target);
}

void Window::check_dead(const char* call, int target) const {
  Runtime& runtime = comm_->runtime();
  runtime.transport().peers().check(comm_->members()[target], runtime.rank(), epochs_.where(call, target));
}

bool Window::exposes(int target, int64_t low, int64_t high) {
  if (low < 0) return false;
  if (dynamic_) return fabric_->attached(target, low, high);
  return static_cast<uint64_t>(high) <= peers_[target].length;
}

// ---- the general calls ----

template <class Call>
void Window::in_pieces(int target, const Region& region, Call&& call) {
  if (routes_[target] != fabric_.get() || fabric_->goes_whole(region)) return call(region, 0);
  uint64_t at = 0;  // (bytes of the origin's data before the piece)
  for (const Region& piece : fabric_->message_pieces(region)) {
    call(piece, at);
    at += piece.bytes();
  }
}

namespace {
// data + bytes, for the origin's buffers of a piece (nullptr stays nullptr: no result buffer).
const void* advanced(const void* data, uint64_t bytes) {
  return data == nullptr ? nullptr : static_cast<const std::byte*>(data) + bytes;
}
void* advanced(void* data, uint64_t bytes) { return data == nullptr ? nullptr : static_cast<std::byte*>(data) + bytes; }
}  // namespace

void Window::put(int target, const void* data, const Region& region, const char* call) {
  if (!admit(call, target, region)) return;
  in_pieces(target, region, [&](const Region& piece, uint64_t at) {
    ridden(target, fabric_->native(piece), call, [&] { routes_[target]->put(target, advanced(data, at), piece); });
  });
}

void Window::get(int target, void* out, const Region& region, const char* call) {
  if (!admit(call, target, region)) return;
  in_pieces(target, region, [&](const Region& piece, uint64_t at) {
    ridden(target, fabric_->native(piece), call, [&] { routes_[target]->get(target, advanced(out, at), piece); });
  });
}

void Window::accumulate(int target, ReduceOp op, ElementType type, const void* data, const Region& region,
                        const char* call) {
  get_accumulate(target, op, type, data, nullptr, region, call);
}

void Window::get_accumulate(int target, ReduceOp op, ElementType type, const void* data, void* result,
                            const Region& region, const char* call) {
  if (!op_fits(op, type)) {
    throw ArgumentTypeError("rma: " + epochs_.where(call, target) + ": " + describe(op) + " does not apply to " +
                            describe(type));
  }
  if (!admit(call, target, region)) return;
  // (Every accumulate to a fabric target is a message.)
  in_pieces(target, region, [&](const Region& piece, uint64_t at) {
    ridden(target, false, call, [&] {
      routes_[target]->accumulate(call, target, op, type, advanced(data, at), advanced(result, at), piece);
    });
  });
}

void Window::compare_and_swap(int target, ElementType type, const void* data, const void* compare, void* result,
                              const Region& region, const char* call) {
  if (!compare_fits(type)) {
    throw ArgumentTypeError("rma: " + epochs_.where(call, target) + ": compare_and_swap takes integers and bool, not " +
                            describe(type));
  }
  if (!admit(call, target, region)) return;
  if (region.elements() != 1) {
    throw UsageError("rma: " + epochs_.where(call, target) + ": exactly one element");
  }
  ridden(target, false, call, [&] { routes_[target]->compare_and_swap(target, type, data, compare, result, region); });
}

// ---- the direct path ----

bool Window::put_direct(int target, const void* data, uint64_t offset, uint64_t bytes) {
  Route* route = route_for(target);
  if (route == nullptr || !route->copies_directly() || !admit_quick(target, offset, bytes)) return false;
  if (MappedRoute* mapped = route->mapped()) {
    std::memmove(mapped->memory(target) + offset, data, bytes);  // the origin may be part of this very window
    return true;
  }
  return counted(route->put_direct(target, data, offset, bytes));
}

bool Window::get_direct(int target, void* out, uint64_t offset, uint64_t bytes) {
  Route* route = route_for(target);
  if (route == nullptr || !route->copies_directly() || !admit_quick(target, offset, bytes)) return false;
  if (MappedRoute* mapped = route->mapped()) {
    std::memmove(out, mapped->memory(target) + offset, bytes);
    return true;
  }
  return counted(route->get_direct(target, out, offset, bytes));
}

bool Window::get_accumulate_direct(int target, ReduceOp op, ElementType type, const void* data, void* result,
                                   uint64_t offset, uint64_t bytes) {
  Route* route = route_for(target);
  MappedRoute* mapped = route == nullptr ? nullptr : route->mapped();
  if (mapped == nullptr) return false;
  size_t element = element_size(type);
  if (element == 0 || bytes % element != 0 || !op_fits(op, type) || !admit_quick(target, offset, bytes)) return false;
  mapped->accumulate_direct(target, op, type, element, data, result, offset, bytes);
  return true;
}

bool Window::compare_and_swap_direct(int target, ElementType type, const void* data, const void* compare, void* result,
                                     uint64_t offset) {
  Route* route = route_for(target);
  MappedRoute* mapped = route == nullptr ? nullptr : route->mapped();
  if (mapped == nullptr || !compare_fits(type)) return false;
  size_t element = element_size(type);
  if (!admit_quick(target, offset, element)) return false;
  mapped->compare_and_swap_direct(target, type, element, data, compare, result, offset);
  return true;
}

bool Window::flush_direct(int target) {
  Route* route = route_for(target);
  // A route that completes its calls as they are made, and no message to target unanswered
  // (an accumulate of a process_vm window, or a call made before it fell back to the fabric).
  if (route == nullptr || !route->immediate() || !epochs_.passive_access(target) || peer_status_->any_dead())
    return false;
  if (fabric_->outstanding_to(target) != 0) return false;
  // Direct calls completed as they were made; the fence orders them before what follows.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  sync_->wake(target);
  return true;
}

}  // namespace rma
