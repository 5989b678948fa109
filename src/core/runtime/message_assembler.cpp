#include "runtime/message_assembler.hpp"

#include <cstring>
#include <string>

#include "errors.hpp"

namespace rma {

MessageAssembler::MessageAssembler(int sources) : sources_(sources) {}

void MessageAssembler::add(const FragmentHeader& header, std::span<const std::byte> payload,
                           std::vector<ActiveMessage>& ready) {
  add(header, std::vector<std::byte>(payload.begin(), payload.end()), ready);
}

void MessageAssembler::add(const FragmentHeader& header, std::vector<std::byte>&& payload,
                           std::vector<ActiveMessage>& ready) {
  if (header.source >= sources_.size() || header.offset + payload.size() > header.total) {
    throw RmaError("rma: malformed active-message fragment from rank " + std::to_string(header.source));
  }
  Source& source = sources_[header.source];
  if (header.sequence < source.next) {
    throw RmaError("rma: duplicate active message from rank " + std::to_string(header.source));
  }
  // Fast path: a whole message that is next in order is handed on as it came, without a copy.
  if (header.sequence == source.next && payload.size() == header.total && source.partial.empty()) {
    ready.push_back({static_cast<int>(header.source), header.handler, std::move(payload)});
    ++source.next;
    return;
  }
  auto [at, fresh] = source.partial.try_emplace(header.sequence);
  Partial& partial = at->second;
  if (fresh) {
    partial.handler = header.handler;
    partial.total = header.total;
    partial.data.reserve(header.total);
  }
  // Fragments usually come in order (always through an inbox): appended, the message's bytes
  // are written once, not zero-filled first.
  size_t end = header.offset + payload.size();
  if (partial.data.size() == header.offset) {
    partial.data.insert(partial.data.end(), payload.begin(), payload.end());
  } else {
    if (partial.data.size() < end) partial.data.resize(end);
    if (!payload.empty()) std::memcpy(partial.data.data() + header.offset, payload.data(), payload.size());
  }
  partial.received += payload.size();
  release_in_order(static_cast<int>(header.source), ready);
}

void MessageAssembler::release_in_order(int source_rank, std::vector<ActiveMessage>& ready) {
  Source& source = sources_[source_rank];
  for (;;) {
    auto next = source.partial.find(source.next);
    // A zero-length message is complete once its single fragment has arrived (it is in the map).
    if (next == source.partial.end() || next->second.received < next->second.total) return;
    ready.push_back({source_rank, next->second.handler, std::move(next->second.data)});
    source.partial.erase(next);
    ++source.next;
  }
}

size_t MessageAssembler::pending() const {
  size_t count = 0;
  for (const auto& source : sources_) count += source.partial.size();
  return count;
}

}  // namespace rma
