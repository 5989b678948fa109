// Reassembly and ordering of active-message fragments, without any fabric.
#include "messages/message_assembler.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#include "base/errors.hpp"
#include "base/message_parts.hpp"
#include "check.hpp"

namespace {
using rma::ActiveMessage;
using rma::FragmentHeader;
using rma::MessageAssembler;

std::vector<std::byte> bytes(const std::string& text) {
  auto begin = reinterpret_cast<const std::byte*>(text.data());
  return {begin, begin + text.size()};
}

std::string text(const std::vector<std::byte>& data) {
  return {reinterpret_cast<const char*>(data.data()), data.size()};
}

FragmentHeader header(uint32_t source, uint64_t sequence, uint64_t offset, uint64_t total) {
  return FragmentHeader{source, 7, 0, sequence, offset, total};
}
}  // namespace

int main() {
  test::run("a message in two parts cut into fragments reads as the parts back to back", [] {
    // Every cut of a header and data sent from where they are (MessageParts) gives the bytes
    // of the one buffer they replace, wherever the cut falls: in the head, across, in the tail.
    std::vector<std::byte> head(37), tail(300), whole;
    for (size_t i = 0; i < head.size(); ++i) head[i] = std::byte(i);
    for (size_t i = 0; i < tail.size(); ++i) tail[i] = std::byte(100 + i);
    whole.insert(whole.end(), head.begin(), head.end());
    whole.insert(whole.end(), tail.begin(), tail.end());
    rma::MessageParts parts{head, tail};
    CHECK(parts.size() == whole.size());
    for (size_t chunk : {1, 7, 37, 38, 64, 337}) {
      std::vector<std::byte> joined;
      for (size_t offset = 0; offset < parts.size(); offset += chunk) {
        size_t bytes = std::min(chunk, parts.size() - offset);
        rma::MessageParts piece = parts.slice(offset, bytes);
        CHECK(piece.size() == bytes);
        std::vector<std::byte> out(bytes);
        piece.copy_to(out.data());
        joined.insert(joined.end(), out.begin(), out.end());
      }
      CHECK(joined == whole);
    }
    CHECK((rma::MessageParts{tail, {}}.slice(10, 5).head.data() == tail.data() + 10));
    CHECK((rma::MessageParts{{}, tail}.slice(10, 5).tail.data() == tail.data() + 10));
  });

  test::run("whole messages in order", [] {
    MessageAssembler assembler(2);
    std::vector<ActiveMessage> ready;
    assembler.add(header(1, 0, 0, 5), bytes("hello"), ready);
    assembler.add(header(1, 1, 0, 0), std::span<const std::byte>(), ready);
    CHECK(ready.size() == 2);
    CHECK(text(ready[0].payload) == "hello");
    CHECK(ready[0].source == 1 && ready[0].handler == 7);
    CHECK(ready[1].payload.empty());
    CHECK(assembler.pending() == 0);
  });

  test::run("a later message waits for an earlier one", [] {
    MessageAssembler assembler(3);
    std::vector<ActiveMessage> ready;
    assembler.add(header(2, 1, 0, 3), bytes("two"), ready);
    CHECK(ready.empty());
    CHECK(assembler.pending() == 1);
    assembler.add(header(2, 0, 0, 3), bytes("one"), ready);
    CHECK(ready.size() == 2);
    CHECK(text(ready[0].payload) == "one");
    CHECK(text(ready[1].payload) == "two");
  });

  test::run("fragments out of order", [] {
    MessageAssembler assembler(1);
    std::vector<ActiveMessage> ready;
    assembler.add(header(0, 0, 6, 11), bytes("world"), ready);
    CHECK(ready.empty());
    assembler.add(header(0, 0, 0, 11), bytes("hello "), ready);
    CHECK(ready.size() == 1);
    CHECK(text(ready[0].payload) == "hello world");
  });

  test::run("fragments in order, then a message that waited for them", [] {
    // The second message, whole, comes before the first is complete: it waits, then follows.
    MessageAssembler assembler(1);
    std::vector<ActiveMessage> ready;
    assembler.add(header(0, 0, 0, 9), bytes("one "), ready);
    assembler.add(header(0, 1, 0, 3), bytes("two"), ready);
    CHECK(ready.empty());
    assembler.add(header(0, 0, 4, 9), bytes("three"), ready);
    CHECK(ready.size() == 2);
    CHECK(text(ready[0].payload) == "one three" && text(ready[1].payload) == "two");
    CHECK(assembler.pending() == 0);
  });

  test::run("sources are independent", [] {
    MessageAssembler assembler(2);
    std::vector<ActiveMessage> ready;
    assembler.add(header(0, 1, 0, 1), bytes("b"), ready);
    assembler.add(header(1, 0, 0, 1), bytes("x"), ready);
    CHECK(ready.size() == 1 && ready[0].source == 1);
  });

  test::run("malformed fragments are refused", [] {
    MessageAssembler assembler(2);
    std::vector<ActiveMessage> ready;
    CHECK_THROWS(rma::RmaError, "malformed", assembler.add(header(5, 0, 0, 1), bytes("x"), ready));
    CHECK_THROWS(rma::RmaError, "malformed", assembler.add(header(0, 0, 4, 5), bytes("xy"), ready));
    assembler.add(header(0, 0, 0, 1), bytes("x"), ready);
    CHECK_THROWS(rma::MalformedMessage, "already handed on", assembler.add(header(0, 0, 0, 1), bytes("x"), ready));
  });

  test::run("no fragment writes outside its message, whatever its header says", [] {
    std::vector<ActiveMessage> ready;
    MessageAssembler assembler(2);
    auto refused = [&](FragmentHeader h, size_t bytes_in, const char* why) {
      CHECK_THROWS(rma::MalformedMessage, why, assembler.add(h, std::vector<std::byte>(bytes_in), ready));
    };
    // An offset near 2^64: offset + size wraps around to a small number.
    refused(header(0, 0, ~uint64_t{0} - 100, 100), 4000, "past the message's end");
    refused(header(0, 0, uint64_t{1} << 63, 1), 1, "past the message's end");
    refused(header(0, 0, 0, rma::kMaxMessageBytes + 1), 10, "longer than any message");
    refused(header(0, rma::kMaxSequencesAhead + 1, 0, 1), 1, "too far ahead");
    // A second fragment that disagrees with the first of its message.
    assembler.add(header(0, 0, 0, 10), bytes("abcd"), ready);
    FragmentHeader other = header(0, 0, 4, 11);
    refused(other, 2, "disagrees");
    other.total = 10;
    other.handler = 9;
    refused(other, 2, "disagrees");
    // More bytes than the message holds (a fragment sent twice).
    assembler.add(header(0, 0, 4, 10), bytes("efgh"), ready);
    refused(header(0, 0, 4, 10), 4, "more bytes than its message holds");
    assembler.add(header(0, 0, 8, 10), bytes("ij"), ready);
    CHECK(ready.size() == 1 && text(ready[0].payload) == "abcdefghij");
    CHECK(assembler.pending() == 0);
  });

  return test::finish();
}
