// Writing and reading plain values in active-message payloads (same machine layout at both
// ends: every rank runs the same build of the core).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "base/errors.hpp"

namespace rma::wire {

template <class T>
void append(std::vector<std::byte>& out, T value) {
  auto bytes = reinterpret_cast<const std::byte*>(&value);
  out.insert(out.end(), bytes, bytes + sizeof value);
}

// Appends the `length` bytes at data.
inline void append_bytes(std::vector<std::byte>& out, const void* data, size_t length) {
  auto bytes = static_cast<const std::byte*>(data);
  out.insert(out.end(), bytes, bytes + length);
}

// Reads a T at data[position] and advances position; MalformedMessage if the message is too
// short.
template <class T>
T take(std::span<const std::byte> data, size_t& position) {
  if (position > data.size() || data.size() - position < sizeof(T)) throw MalformedMessage("a truncated message");
  T value;
  std::memcpy(&value, data.data() + position, sizeof value);
  position += sizeof value;
  return value;
}

// The next `length` bytes of data at position, advancing position; MalformedMessage if the
// message holds fewer.
inline std::span<const std::byte> take_bytes(std::span<const std::byte> data, size_t& position, uint64_t length) {
  if (position > data.size() || data.size() - position < length) {
    throw MalformedMessage("a message shorter than the " + std::to_string(length) + " bytes it says it holds");
  }
  auto bytes = data.subspan(position, static_cast<size_t>(length));
  position += static_cast<size_t>(length);
  return bytes;
}

}  // namespace rma::wire
