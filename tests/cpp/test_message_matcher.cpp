// Matching of communicator messages to receives (MPI's rules), without any transport.
#include "messages/message_matcher.hpp"

#include <string>

#include "check.hpp"

namespace {
using rma::MessageMatcher;

std::vector<std::byte> bytes(const std::string& text) {
  auto begin = reinterpret_cast<const std::byte*>(text.data());
  return {begin, begin + text.size()};
}

std::string text(const std::vector<std::byte>& data) {
  return {reinterpret_cast<const char*>(data.data()), data.size()};
}

// The text a posted receive got, or "" if it is not filled.
std::string got(MessageMatcher& matcher, MessageMatcher::Receive& receive) {
  auto message = matcher.collect(receive);
  return message ? text(message->data) : "";
}

constexpr uint32_t kContext = 3;
}  // namespace

int main() {
  test::run("a receive takes the oldest queued message of its source and tag", [] {
    MessageMatcher matcher;
    matcher.deliver(kContext, 1, 5, bytes("a"));
    matcher.deliver(kContext, 2, 5, bytes("b"));
    matcher.deliver(kContext, 1, 5, bytes("c"));
    auto first = matcher.post(kContext, 1, 5);
    auto second = matcher.post(kContext, 1, 5);
    CHECK(got(matcher, *first) == "a");
    CHECK(got(matcher, *second) == "c");
    CHECK(got(matcher, *matcher.post(kContext, 2, 5)) == "b");
  });

  test::run("wildcards take the oldest arrival of any source or user tag", [] {
    MessageMatcher matcher;
    matcher.deliver(kContext, 2, 9, bytes("first"));
    matcher.deliver(kContext, 1, 4, bytes("second"));
    matcher.deliver(kContext, 1, -3, bytes("collective"));  // never taken by a wildcard
    auto any = matcher.post(kContext, MessageMatcher::kAnySource, MessageMatcher::kAnyUserTag);
    CHECK(got(matcher, *any) == "first");
    CHECK(any->message == std::nullopt);
    auto from_one = matcher.post(kContext, 1, MessageMatcher::kAnyUserTag);
    CHECK(got(matcher, *from_one) == "second");
    auto none = matcher.post(kContext, MessageMatcher::kAnySource, MessageMatcher::kAnyUserTag);
    CHECK(!matcher.filled(*none));
    CHECK(text(*matcher.take(kContext, 1, -3)) == "collective");
    matcher.withdraw(none);
  });

  test::run("a message goes to the receive posted first", [] {
    MessageMatcher matcher;
    auto wildcard = matcher.post(kContext, MessageMatcher::kAnySource, MessageMatcher::kAnyUserTag);
    auto exact = matcher.post(kContext, 1, 5);
    matcher.deliver(kContext, 1, 5, bytes("one"));
    matcher.deliver(kContext, 1, 5, bytes("two"));
    CHECK(got(matcher, *wildcard) == "one");
    CHECK(got(matcher, *exact) == "two");
  });

  test::run("other contexts and the collectives' tags never match a posted receive", [] {
    MessageMatcher matcher;
    auto receive = matcher.post(kContext, MessageMatcher::kAnySource, MessageMatcher::kAnyUserTag);
    matcher.deliver(kContext + 1, 1, 0, bytes("other communicator"));
    matcher.deliver(kContext, 1, -1000, bytes("barrier"));
    CHECK(!matcher.filled(*receive));
    CHECK(text(*matcher.take(kContext + 1, 1, 0)) == "other communicator");
    CHECK(text(*matcher.take(kContext, 1, -1000)) == "barrier");
    matcher.withdraw(receive);
  });

  test::run("a withdrawn receive gives its message back, before later ones", [] {
    MessageMatcher matcher;
    auto dropped = matcher.post(kContext, 1, 5);
    matcher.deliver(kContext, 1, 5, bytes("early"));
    CHECK(matcher.filled(*dropped));
    matcher.deliver(kContext, 1, 5, bytes("late"));
    matcher.withdraw(dropped);
    CHECK(got(matcher, *matcher.post(kContext, 1, 5)) == "early");
    CHECK(got(matcher, *matcher.post(kContext, 1, 5)) == "late");
    // Withdrawn before anything came: it no longer takes messages.
    auto empty = matcher.post(kContext, 1, 5);
    matcher.withdraw(empty);
    matcher.deliver(kContext, 1, 5, bytes("kept"));
    CHECK(!matcher.filled(*empty));
    CHECK(got(matcher, *matcher.post(kContext, 1, 5)) == "kept");
  });

  test::run("a probe sees the message a receive would take and leaves it; a matched probe takes it", [] {
    MessageMatcher matcher;
    CHECK(!matcher.peek(kContext, MessageMatcher::kAnySource, MessageMatcher::kAnyUserTag));
    matcher.deliver(kContext, 2, 7, bytes("abc"));
    matcher.deliver(kContext, 1, 8, bytes("later"));
    matcher.deliver(kContext, 1, -3, bytes("collective"));  // never seen by a user's probe
    auto seen = matcher.peek(kContext, MessageMatcher::kAnySource, MessageMatcher::kAnyUserTag);
    CHECK(seen && seen->source == 2 && seen->tag == 7 && seen->bytes == 3);
    auto from_one = matcher.peek(kContext, 1, MessageMatcher::kAnyUserTag);
    CHECK(from_one && from_one->tag == 8);
    auto taken = matcher.take_matching(kContext, MessageMatcher::kAnySource, MessageMatcher::kAnyUserTag);
    CHECK(taken && text(taken->data) == "abc");
    // Taken out: the next receive of any source gets the later message.
    CHECK(got(matcher, *matcher.post(kContext, MessageMatcher::kAnySource, MessageMatcher::kAnyUserTag)) == "later");
    CHECK(!matcher.take_matching(kContext, MessageMatcher::kAnySource, MessageMatcher::kAnyUserTag));
    CHECK(text(*matcher.take(kContext, 1, -3)) == "collective");
  });

  test::run("a synchronous message owes its acknowledgement once, when it matches", [] {
    MessageMatcher matcher;
    matcher.deliver(kContext, 4, 1, bytes("queued"), 11);
    CHECK(matcher.take_acks().empty());  // unexpected: not matched yet
    CHECK(matcher.peek(kContext, 4, 1));
    CHECK(matcher.take_acks().empty());  // a probe does not match it
    auto receive = matcher.post(kContext, 4, 1);
    auto acks = matcher.take_acks();
    CHECK(acks.size() == 1 && acks[0].source == 4 && acks[0].id == 11 && acks[0].context == kContext);
    CHECK(matcher.take_acks().empty());
    // Matching a posted receive; withdrawn later, its message does not owe a second one.
    auto posted = matcher.post(kContext, 4, 2);
    matcher.deliver(kContext, 4, 2, bytes("direct"), 12);
    CHECK(matcher.take_acks().size() == 1);
    matcher.withdraw(posted);
    CHECK(got(matcher, *matcher.post(kContext, 4, 2)) == "direct");
    CHECK(matcher.take_acks().empty());
    // A matched probe matches too.
    matcher.deliver(kContext, 4, 3, bytes("probed"), 13);
    CHECK(matcher.take_matching(kContext, 4, 3));
    CHECK(matcher.take_acks().size() == 1);
    CHECK(got(matcher, *receive) == "queued");
  });

  test::run("cancel withdraws a receive only while no message matched it", [] {
    MessageMatcher matcher;
    auto waiting = matcher.post(kContext, 1, 5);
    CHECK(matcher.cancel(waiting));
    matcher.deliver(kContext, 1, 5, bytes("after"));
    CHECK(!matcher.filled(*waiting));
    auto filled = matcher.post(kContext, 1, 5);
    CHECK(!matcher.cancel(filled));
    CHECK(got(matcher, *filled) == "after");
  });
  return test::finish();
}
