// The numbering of active messages at the sender, without any fabric: a message takes its
// sequence number only when its first fragment is committed, so a send refused before that
// leaves no gap at the receiver (which hands messages on strictly in order); a broken route
// refuses every later message to its rank, and only to it.
#include "messages/message_router.hpp"

#include <string>

#include "base/errors.hpp"
#include "base/peer_status.hpp"
#include "check.hpp"

namespace {
using rma::FragmentHeader;
using rma::Fragments;
using rma::MessageRouter;
using Bytes = std::vector<std::byte>;

Bytes bytes(const std::string& text) {
  auto begin = reinterpret_cast<const std::byte*>(text.data());
  return {begin, begin + text.size()};
}

constexpr uint16_t kHandler = 7;

// Sends `text` from `sender` to rank `target` as one fragment appended to `wire`.
bool send(MessageRouter& sender, int target, const std::string& text, Fragments& wire) {
  FragmentHeader header = sender.header(kHandler, text.size());
  return sender.commit_first(target, header, [&] {
    wire.emplace_back(header, bytes(text));
    return true;
  });
}
}  // namespace

int main() {
  test::run("a malformed message makes its source untrusted, and only it", [] {
    rma::PeerStatus peers(3);
    MessageRouter zero(0, 3, peers), two(2, 3, peers), receiver(1, 3, peers);
    std::vector<std::string> got;
    receiver.set_handler(kHandler, [&](int source, Bytes&& payload) {
      if (payload.empty()) throw rma::MalformedMessage("an empty message");
      got.push_back(std::to_string(source) + ":" + std::string(reinterpret_cast<const char*>(payload.data()), 1));
    });
    Fragments wire;
    send(zero, 1, "a", wire);
    send(two, 1, "b", wire);
    send(zero, 1, "", wire);   // the handler finds it malformed
    send(zero, 1, "c", wire);  // dropped: rank 0 is no longer trusted
    send(two, 1, "d", wire);
    receiver.deliver(std::move(wire));
    CHECK((got == std::vector<std::string>{"0:a", "2:b", "2:d"}));
    CHECK(!receiver.trusts(0) && receiver.trusts(2));
    // A fragment whose offset wraps around 2^64: refused before a byte of it is copied.
    FragmentHeader wrapping = two.header(kHandler, 100);
    two.commit_first(1, wrapping, [] { return true; });
    wrapping.offset = ~uint64_t{0} - 10;
    wire.clear();
    wire.emplace_back(wrapping, Bytes(4000, std::byte{1}));
    send(two, 1, "e", wire);
    receiver.deliver(std::move(wire));
    CHECK(got.size() == 3);
    CHECK(!receiver.trusts(0) && !receiver.trusts(2));
    CHECK(peers.dead(0) && peers.dead(2) && !peers.dead(1));
    CHECK_THROWS(rma::PeerError,
                 "rank 0 is no longer trusted by rank 1: it sent a malformed message for handler 7: an empty message",
                 peers.check(0, 1, "comm.recv"));
    CHECK_THROWS(rma::PeerError, "its bytes go past the message's end", peers.check(2, 1, "comm.recv"));
  });

  test::run("a message refused before anything left takes no number", [] {
    rma::PeerStatus peers(2);
    MessageRouter sender(0, 2, peers), receiver(1, 2, peers);
    std::vector<std::string> got;
    receiver.set_handler(kHandler, [&](int source, Bytes&& payload) {
      CHECK(source == 0);
      got.emplace_back(reinterpret_cast<const char*>(payload.data()), payload.size());
    });
    Fragments wire;
    CHECK(send(sender, 1, "one", wire));
    FragmentHeader refused = sender.header(kHandler, 7);
    CHECK(!sender.commit_first(1, refused, [] { return false; }));  // no room, then the deadline
    CHECK_THROWS(rma::TimeoutError, "no room",
                 sender.commit_first(1, refused, []() -> bool { throw rma::TimeoutError("no room"); }));
    CHECK(send(sender, 1, "two", wire));
    CHECK(wire.size() == 2 && wire[0].first.sequence == 0 && wire[1].first.sequence == 1);
    receiver.deliver(std::move(wire));
    CHECK((got == std::vector<std::string>{"one", "two"}));
  });

  test::run("each destination is numbered apart, itself included", [] {
    rma::PeerStatus peers(3);
    MessageRouter sender(1, 3, peers);
    Fragments wire;
    for (int target : {0, 2, 2, 1, 0, 2}) send(sender, target, "x", wire);
    std::vector<uint64_t> sequences;
    for (const auto& fragment : wire) sequences.push_back(fragment.first.sequence);
    CHECK((sequences == std::vector<uint64_t>{0, 0, 1, 0, 1, 2}));
    CHECK(wire[0].first.source == 1 && wire[0].first.offset == 0 && wire[0].first.total == 1);
  });

  test::run("a broken route refuses every later message to its rank, and only to it", [] {
    rma::PeerStatus peers(3);
    MessageRouter sender(0, 3, peers);
    Fragments wire;
    send(sender, 1, "before", wire);
    sender.break_route(1, "fi_send: Connection reset by peer");
    sender.break_route(1, "a later failure");  // the first reason stays
    bool committed = false;
    FragmentHeader header = sender.header(kHandler, 0);
    auto commit = [&] { return committed = true; };
    CHECK_THROWS(rma::PeerError, "can no longer send messages to rank 1", sender.commit_first(1, header, commit));
    CHECK_THROWS(rma::PeerError, "Connection reset by peer", sender.commit_first(1, header, commit));
    CHECK(!committed);
    CHECK(send(sender, 2, "elsewhere", wire));
  });

  return test::finish();
}
