// The window layer's active-message ids (Transport::set_handler), in the range the runtime
// leaves to the layers above it (runtime.hpp).
#pragma once

#include <cstdint>

#include "runtime/runtime.hpp"

namespace rma {

enum WindowMessageId : uint16_t {
  kWindowApply = 10,        // apply data or an op to a region of a target's window
  kWindowRead = 11,         // read a region
  kWindowReply = 12,        // acknowledgement or data for the origin
  kWindowAttachments = 13,  // a dynamic window's attached ranges, please
  kWindowPost = 14,         // the sender opened an exposure epoch for us
  kWindowComplete = 15,     // the sender completed its access epoch to us
  kWindowLock = 16,         // a lock request (exclusive or shared, or a try)
  kWindowUnlock = 17,       // the sender releases its lock
  kWindowGrant = 18,        // the answer to a lock request
  kWindowLockedCall = 19,   // a lock request carrying its epoch's first call (whose reply grants)
};
// A lock on a rank of another host is requested with its epoch's first call (MessageSync's
// defer_lock): up to this many calls that travel as messages follow the request before its
// grant came back, and the target holds them until it grants the lock; the next call waits
// for the grant. The target refuses more as a malformed stream (a bound on what it holds).
constexpr int kRidingCalls = 8;
static_assert(kWindowApply >= kFirstLayerMessageId, "the runtime's own ids are below kFirstLayerMessageId");

}  // namespace rma
