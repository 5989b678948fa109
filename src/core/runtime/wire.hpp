// Writing and reading plain values in active-message payloads (same machine layout at both
// ends: every rank runs the same build of the core).
#pragma once

#include <cstddef>
#include <cstring>
#include <span>
#include <vector>

#include "errors.hpp"

namespace rma::wire {

template <class T>
void append(std::vector<std::byte>& out, T value) {
  auto bytes = reinterpret_cast<const std::byte*>(&value);
  out.insert(out.end(), bytes, bytes + sizeof value);
}

// Reads a T at data[position] and advances position; RmaError if the message is too short.
template <class T>
T take(std::span<const std::byte> data, size_t& position) {
  if (position + sizeof(T) > data.size()) throw RmaError("rma: truncated message");
  T value;
  std::memcpy(&value, data.data() + position, sizeof value);
  position += sizeof value;
  return value;
}

}  // namespace rma::wire
