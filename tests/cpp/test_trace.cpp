// The trace's ring (base/trace.hpp) alone: off records nothing, a full ring keeps the newest
// records and counts the ones it overwrote, take() hands them over oldest first and empties it,
// and waits are recorded only when they waited.
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "base/trace.hpp"
#include "check.hpp"

namespace {
namespace trace = rma::trace;

// A record numbered by its bytes (its times are the clock's: take() converts them).
trace::Record call(uint64_t number) {
  int64_t at = trace::ticks();
  return trace::Record{at, at, "put", nullptr, nullptr, number, 1, 0, trace::thread_number(), trace::Kind::Call};
}
}  // namespace

int main() {
  test::run("off records nothing", [] {
    trace::start(8);
    trace::stop();
    trace::epoch(true, 1, "fence", -1, {0, 1});
    trace::error("PeerError", "gone");
    trace::Taken taken = trace::take();
    CHECK(taken.records.empty());
    CHECK(taken.dropped == 0);
  });

  test::run("keeps the newest records and counts the dropped ones", [] {
    trace::start(4);
    for (uint64_t number = 0; number < 10; ++number) trace::add(call(number));
    trace::Taken taken = trace::take();
    CHECK(taken.capacity == 4);
    CHECK(taken.dropped == 6);
    CHECK(taken.records.size() == 4);
    for (size_t i = 0; i < taken.records.size(); ++i) CHECK(taken.records[i].bytes == 6 + i);
    // take() emptied it: the next take has nothing, dropped counts again from 0.
    trace::add(call(20));
    trace::Taken next = trace::take();
    CHECK(next.records.size() == 1 && next.records[0].bytes == 20 && next.dropped == 0);
    trace::stop();
  });

  test::run("times come out on the steady clock, in order", [] {
    trace::start(8);
    int64_t before = trace::now_ns();
    trace::add(call(1));
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    trace::add(call(2));
    int64_t after = trace::now_ns();
    std::vector<trace::Record> records = trace::take().records;
    trace::stop();
    CHECK(records.size() == 2);
    // (Within 50 us of the steady clock: the conversion's error on a short recording.)
    CHECK(records[0].begin_ns >= before - 50'000 && records[1].begin_ns <= after + 50'000);
    CHECK(records[1].begin_ns - records[0].begin_ns >= 1'900'000);
  });

  test::run("start clears what an earlier recording left", [] {
    trace::start(4);
    trace::add(call(1));
    trace::start(2);
    CHECK(trace::take().records.empty());
    trace::stop();
  });

  test::run("epochs and errors carry their ranks and text", [] {
    trace::start(8);
    trace::epoch(true, 3, "access", -1, {2, 5});
    trace::epoch(false, 3, "access", -1, {2, 5});
    trace::error("ConflictError", "two puts");
    std::vector<trace::Record> records = trace::take().records;
    trace::stop();
    CHECK(records.size() == 3);
    CHECK(records[0].kind == trace::Kind::EpochOpen && records[1].kind == trace::Kind::EpochClose);
    CHECK(std::string(records[0].text) == "2,5" && records[0].object == 3);
    CHECK(records[2].kind == trace::Kind::Error && std::string(records[2].text) == "two puts");
    CHECK(std::string(records[2].name) == "ConflictError");
  });

  test::run("a wait is recorded only once it began, with the ranks it watched", [] {
    trace::start(8);
    {
      trace::WaitSpan quick;
    }  // the condition held at once: no record
    {
      trace::WaitSpan waited;
      waited.begin(std::vector<int>{1, 3});
    }
    std::vector<trace::Record> records = trace::take().records;
    trace::stop();
    CHECK(records.size() == 1);
    CHECK(records[0].kind == trace::Kind::Wait && std::string(records[0].text) == "1,3");
    CHECK(records[0].end_ns >= records[0].begin_ns);
  });

  test::run("threads record into one ring, each with its own number", [] {
    trace::start(1000);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([] {
        for (int i = 0; i < 100; ++i) trace::add(call(i));
      });
    }
    for (std::thread& thread : threads) thread.join();
    std::vector<trace::Record> records = trace::take().records;
    trace::stop();
    CHECK(records.size() == 400);
    std::vector<uint32_t> numbers;
    for (const trace::Record& r : records) {
      bool known = false;
      for (uint32_t n : numbers) known = known || n == r.thread;
      if (!known) numbers.push_back(r.thread);
    }
    CHECK(numbers.size() == 4);
  });

  test::run("interned text is one copy per distinct text", [] {
    CHECK(trace::intern("abc") == trace::intern(std::string("ab") + "c"));
    CHECK(std::string(trace::ranks_text({})) == "");
  });

  return test::finish();
}
