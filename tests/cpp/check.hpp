// A minimal test harness for the core's unit tests: CHECK records failures and goes on;
// finish() prints the "N passed, N failed" line and returns the exit status.
#pragma once

#include <cstdio>
#include <exception>
#include <functional>
#include <string>

namespace test {

inline int& passed() {
  static int count = 0;
  return count;
}
inline int& failed() {
  static int count = 0;
  return count;
}

inline void record(bool ok, const char* expression, const char* file, int line) {
  if (ok) {
    ++passed();
  } else {
    ++failed();
    std::fprintf(stderr, "%s:%d: CHECK failed: %s\n", file, line, expression);
  }
}

// Runs one named case; an escaping exception counts as a failure.
inline void run(const std::string& name, const std::function<void()>& body) {
  try {
    body();
  } catch (const std::exception& e) {
    ++failed();
    std::fprintf(stderr, "%s: unexpected exception: %s\n", name.c_str(), e.what());
  }
}

inline int finish() {
  std::printf("%d passed, %d failed\n", passed(), failed());
  return failed() == 0 ? 0 : 1;
}

}  // namespace test

#define CHECK(expression) ::test::record(static_cast<bool>(expression), #expression, __FILE__, __LINE__)

// Checks that `statement` throws an exception of `type` whose message contains `text`.
#define CHECK_THROWS(type, text, statement)                                                  \
  do {                                                                                       \
    bool thrown_ = false;                                                                    \
    try {                                                                                    \
      statement;                                                                             \
    } catch (const type& e) {                                                                \
      thrown_ = std::string(e.what()).find(text) != std::string::npos;                       \
      if (!thrown_) std::fprintf(stderr, "unexpected message: %s\n", e.what());              \
    }                                                                                        \
    ::test::record(thrown_, #statement " throws " #type " with " #text, __FILE__, __LINE__); \
  } while (0)
