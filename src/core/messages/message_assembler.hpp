// Reassembly and ordering of active messages. A message travels as one or more fragments;
// fragments may arrive in any order (we ask the provider for no ordering), and messages are
// handed on in the order each source sent them, which gives send/recv MPI's non-overtaking rule.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <utility>
#include <vector>

namespace rma {

// Travels in front of every fragment.
struct FragmentHeader {
  uint32_t source;   // world rank of the sender
  uint16_t handler;  // which active-message handler receives the message
  uint16_t reserved;
  uint64_t sequence;  // per (source, destination), from 0
  uint64_t offset;    // of this fragment's payload within the message
  uint64_t total;     // message length in bytes
};
static_assert(sizeof(FragmentHeader) == 32);

// A fragment, header included, is at most kFragmentBytes long (a posted receive's buffer, an
// inbox slot); a longer message is split.
inline constexpr size_t kFragmentBytes = 64 * 1024;
inline constexpr size_t kFragmentPayload = kFragmentBytes - sizeof(FragmentHeader);

// What the assembler believes of a fragment's header: nothing a rank sends can make it write
// outside a message's buffer, allocate without bound or skip ahead of messages it must hand on
// in order. A message may be at most kMaxMessageBytes long, and a source at most
// kMaxSequencesAhead messages ahead of the one handed on next.
inline constexpr uint64_t kMaxMessageBytes = uint64_t{1} << 40;
inline constexpr uint64_t kMaxSequencesAhead = uint64_t{1} << 20;

// Fragments as they arrive, each with its payload.
using Fragments = std::vector<std::pair<FragmentHeader, std::vector<std::byte>>>;

struct ActiveMessage {
  int source;
  uint16_t handler;
  std::vector<std::byte> payload;
};

class MessageAssembler {
 public:
  explicit MessageAssembler(int sources);
  // Takes one fragment; appends to `ready` every message this completes, in source order.
  // Throws MalformedMessage on a fragment that breaks the rules above (a source outside the
  // job, an offset or length past the message's end, a sequence number already handed on or
  // too far ahead, a fragment that disagrees with the message it belongs to); nothing of it is
  // kept. The caller trusts the header's source: it checked it against where the fragment came
  // from.
  void add(const FragmentHeader& header, std::span<const std::byte> payload, std::vector<ActiveMessage>& ready);
  // The same, taking the payload's bytes (a whole message is handed on without a copy).
  void add(const FragmentHeader& header, std::vector<std::byte>&& payload, std::vector<ActiveMessage>& ready);
  // Messages begun or waiting for earlier ones (for diagnostics and tests).
  size_t pending() const;

 private:
  struct Partial {
    uint16_t handler = 0;
    std::vector<std::byte> data;  // grows as fragments come; total bytes once all did
    uint64_t total = 0;
    uint64_t received = 0;  // payload bytes taken; more than total only for a malformed message
  };
  struct Source {
    uint64_t next = 0;                    // the sequence number to hand on next
    std::map<uint64_t, Partial> partial;  // by sequence number
  };
  void release_in_order(int source, std::vector<ActiveMessage>& ready);
  std::vector<Source> sources_;
};

}  // namespace rma
