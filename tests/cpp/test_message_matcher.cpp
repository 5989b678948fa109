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
  return test::finish();
}
