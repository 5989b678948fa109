#include "check/byte_digest.hpp"

#include <cstring>

namespace rma::check {

// Eight independent lanes, each a multiply-xorshift chain over every eighth word: one chain
// waits some six cycles a word for its multiply and shift, eight keep the multiplier busy (a
// large put's origin is digested at the call and at its completion).
uint64_t digest_of(std::span<const std::byte> bytes) {
  constexpr uint64_t kPrime = 0x100000001b3ULL;
  auto mix = [](uint64_t lane, uint64_t word) {
    lane = (lane ^ word) * kPrime;
    return lane ^ (lane >> 29);
  };
  const std::byte* data = bytes.data();
  size_t size = bytes.size();
  uint64_t lanes[8];
  for (int k = 0; k < 8; ++k) lanes[k] = 0x9e3779b97f4a7c15ULL * static_cast<uint64_t>(k + 1) ^ size;
  size_t i = 0;
  for (; i + 64 <= size; i += 64) {
    uint64_t words[8];
    std::memcpy(words, data + i, 64);
    for (int k = 0; k < 8; ++k) lanes[k] = mix(lanes[k], words[k]);
  }
  for (; i + 8 <= size; i += 8) {
    uint64_t word;
    std::memcpy(&word, data + i, 8);
    lanes[0] = mix(lanes[0], word);
  }
  for (; i < size; ++i) lanes[1] = mix(lanes[1], static_cast<uint64_t>(data[i]));
  uint64_t hash = lanes[0];
  for (int k = 1; k < 8; ++k) hash = mix(hash, lanes[k]);
  return hash;
}

}  // namespace rma::check
