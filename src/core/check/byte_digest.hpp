// A digest of bytes under RMA_CHECK: enough to see that an origin or result array changed
// between its call and the call's completion (array_watches.hpp); not a defence against anyone.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace rma::check {

// A change within one aligned 8-byte word (of any one byte, say) always changes the digest:
// each step is one-to-one in the word it takes in and in the state it carries on. Larger
// changes may, rarely, collide. The length counts too.
uint64_t digest_of(std::span<const std::byte> bytes);

}  // namespace rma::check
