#include "messages/message_assembler.hpp"

#include <algorithm>
#include <cstring>
#include <string>

#include "base/errors.hpp"

namespace rma {

MessageAssembler::MessageAssembler(int sources) : sources_(sources) {}

void MessageAssembler::add(const FragmentHeader& header, std::span<const std::byte> payload,
                           std::vector<ActiveMessage>& ready) {
  add(header, std::vector<std::byte>(payload.begin(), payload.end()), ready);
}

void MessageAssembler::add(const FragmentHeader& header, std::vector<std::byte>&& payload,
                           std::vector<ActiveMessage>& ready) {
  auto malformed = [&](const std::string& what) {
    return MalformedMessage("a malformed message fragment (sequence " + std::to_string(header.sequence) + ", " +
                            std::to_string(payload.size()) + " bytes at offset " + std::to_string(header.offset) +
                            " of " + std::to_string(header.total) + "): " + what);
  };
  if (header.source >= sources_.size()) throw malformed("its source is not a rank of the job");
  // (Overflow-safe: offset + size could wrap around past 2^64.)
  if (header.total > kMaxMessageBytes) throw malformed("longer than any message rma sends");
  if (header.offset > header.total || payload.size() > header.total - header.offset) {
    throw malformed("its bytes go past the message's end");
  }
  Source& source = sources_[header.source];
  if (header.sequence < source.next) throw malformed("a message already handed on has this sequence number");
  if (header.sequence - source.next > kMaxSequencesAhead) throw malformed("too far ahead of the messages handed on");
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
    // Room for the whole message at once, up to a bound: a total is only a claim until the bytes come.
    partial.data.reserve(std::min<uint64_t>(header.total, uint64_t{1} << 30));
  } else if (partial.handler != header.handler || partial.total != header.total) {
    throw malformed("its header disagrees with the earlier fragments of its message");
  }
  if (payload.size() > partial.total - partial.received) throw malformed("more bytes than its message holds");
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
    // Every byte counted came from a fragment inside the message, no fragment counted twice
    // beyond its total (add): a message whose bytes are all in is as long as it says.
    next->second.data.resize(next->second.total);
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
