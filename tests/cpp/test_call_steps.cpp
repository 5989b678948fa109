// RMA_CHECK's steps of a checked window's calls (check/call_steps.hpp), at rank 0 of a job of 2
// forked ranks over shm with real checkers: the serials, which watches each completion
// finishes, what a flush completes that a flush_local does not, the locks the steps remember
// from lock to unlock, and start's post clock taken before the first call to its target.
// Rank 1 only makes the checkers with rank 0 and frees them.
#include <sys/wait.h>

#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "check.hpp"
#include "check/call_steps.hpp"
#include "fork_job.hpp"
#include "runtime/communicator.hpp"
#include "runtime/runtime.hpp"

namespace {
using namespace rma::check;

// The host as the test has it: arrays that never change unless a case says so, and a log of
// what the steps asked.
struct Host final : CallHost {
  std::map<ArraySlot, uint64_t> now;  // each array's digest as it is now
  std::vector<std::string> log;
  std::vector<std::string> reports;
  int blocked = 0;

  uint64_t digest(ArraySlot slot) override {
    log.push_back("digest " + std::to_string(slot));
    return now[slot];
  }
  // Each slot's array at an address of its own (no two calls share bytes).
  void memory(ArraySlot slot, Spans& bytes) override { bytes = {{1000 * (slot + 1), 1000 * (slot + 1) + 8}}; }
  void deliver(ArraySlot slot) override { log.push_back("deliver " + std::to_string(slot)); }
  void release(ArraySlot slot) override { log.push_back("release " + std::to_string(slot)); }
  void blocking(const std::function<void()>& step) override {
    ++blocked;
    step();
  }
  const std::string& call_site() override {
    static const std::string site = "program.py:3";
    return site;
  }
  void report(const std::string& conflict) override { reports.push_back(conflict); }
};

// One checked window per case (a checker reports its first conflict only): the checker, its
// clock board (a window of the checker's communicator, under lock_all as rma.check.window
// keeps it) and the steps.
struct Checked {
  Host host;
  PendingMemory memory;
  std::shared_ptr<rma::Window> board;
  std::unique_ptr<CallSteps> steps;
};

constexpr int kCases = 8;
constexpr int kRanks = 2;

std::unique_ptr<Checked> make_checked(rma::Communicator& world, VectorClock& clock, int number) {
  auto checked = std::make_unique<Checked>();
  auto comm = world.split(0, world.rank());
  checked->board =
      rma::Window::create_shared(*comm, WindowChecker::kBoardRows * kRanks * sizeof(int64_t), true, "board");
  checked->board->lock_all(0);
  auto checker = std::make_shared<WindowChecker>(clock, comm, std::vector<int>{0, 1},
                                                 "window " + std::to_string(number), checked->board);
  checked->steps = std::make_unique<CallSteps>(std::move(checker), checked->host, checked->memory);
  return checked;
}

const std::string& put = interned("win.put");
const std::string& get = interned("win.get");
const Span kBytes[] = {{0, 8}};
const int kTarget1[] = {1};
const int kTarget0[] = {0};

// A put from the array in `origin` to bytes 8 * origin to 8 * origin + 7 (each slot's its own:
// two puts to the same bytes would conflict).
uint64_t put_to(CallSteps& steps, int target, ArraySlot origin) {
  const Span bytes[] = {{8 * uint64_t{origin}, 8 * uint64_t{origin} + 8}};
  return steps.record(target, put, AccessKind::Write, "", "", 0, bytes, {std::nullopt, origin});
}

using Log = std::vector<std::string>;

// Entry 0 (rank 0's) of row `row` of rank 1's clock board.
int64_t board_entry(Checked& checked, int row) {
  auto* entries = reinterpret_cast<const int64_t*>(checked.board->segment(1)->data());
  return entries[row * kRanks];
}

void cases(std::vector<std::unique_ptr<Checked>>& checked, VectorClock& clock) {
  test::run("each data call takes the next serial; one that touched nothing watches nothing", [&] {
    Checked& c = *checked[0];
    CHECK(c.steps->record(1, put, AccessKind::Write, "", "", 0, {}, {std::nullopt, 7}) == 1);
    CHECK((c.host.log == Log{"release 7"}));
    CHECK(put_to(*c.steps, 1, 8) == 2);
    CHECK((c.host.log == Log{"release 7", "digest 8"}));
    CHECK(c.steps->record(1, get, AccessKind::Read, "", "", 0, kBytes, {9, std::nullopt}) == 3);
  });

  test::run("a flush of target 1, local or not, finishes the watches of calls to 1 only", [&] {
    Checked& c = *checked[1];
    put_to(*c.steps, 1, 1);
    put_to(*c.steps, 0, 2);
    c.host.log.clear();
    c.steps->flushed(kTarget1, /*local=*/true);
    CHECK((c.host.log == Log{"digest 1", "release 1"}));
    put_to(*c.steps, 1, 3);
    c.host.log.clear();
    c.steps->flushed(kTarget1, /*local=*/false);
    CHECK((c.host.log == Log{"digest 3", "release 3"}));
    c.host.log.clear();
    c.steps->flushed(kTarget0, /*local=*/false);
    CHECK((c.host.log == Log{"digest 2", "release 2"}));
    CHECK(c.host.reports.empty());
  });

  test::run("a flush completes the calls at their target; a flush_local does not", [&] {
    for (bool local : {false, true}) {
      Checked& c = *checked[local ? 3 : 2];
      c.steps->record(1, get, AccessKind::Read, "", "", 0, kBytes, {});
      c.steps->flushed(kTarget1, local);
      // A put to the bytes the get read: a conflict unless the get completed there.
      c.steps->record(1, put, AccessKind::Write, "", "", 0, kBytes, {std::nullopt, 1});
      CHECK(c.host.reports.size() == (local ? 1u : 0u));
      CHECK(!local || (!c.host.reports.empty() &&
                       c.host.reports[0].find("conflicting accesses to window 3 on rank 1") != std::string::npos));
    }
  });

  test::run("an unlock leaves the clock of the lock the steps saw granted, exclusive or shared", [&] {
    Checked& c = *checked[4];
    int64_t own = clock.entries()[0];
    c.steps->unlocking(1);  // (not locked by the checker's steps: a lock _try_lock took, say)
    CHECK(clock.entries()[0] == own);
    c.steps->locked(1, /*exclusive=*/false);
    c.steps->unlocking(1);
    CHECK(clock.entries()[0] == own + 1);
    CHECK(board_entry(c, 0) == own + 1);
    CHECK(board_entry(c, 1) == 0);  // (a shared lock orders no later shared one)
    c.steps->unlocking(1);          // (unlocked already)
    CHECK(clock.entries()[0] == own + 1);
    c.steps->locked(1, /*exclusive=*/true);
    c.steps->unlocking(1);
    CHECK(board_entry(c, 0) == own + 2);
    CHECK(board_entry(c, 1) == own + 2);
  });

  test::run("unlock_all leaves the clock only after the steps saw lock_all granted", [&] {
    Checked& c = *checked[5];
    int64_t own = clock.entries()[0];
    c.steps->unlocking_all();
    CHECK(clock.entries()[0] == own);
    c.steps->locked_all();
    c.steps->unlocking_all();
    CHECK(clock.entries()[0] == own + 1);
    CHECK(board_entry(c, 0) == own + 1);
    c.steps->unlocking_all();
    CHECK(clock.entries()[0] == own + 1);
  });

  test::run("start's post clock is taken once, before the first call to its target; complete finishes its group", [&] {
    Checked& c = *checked[6];
    c.steps->started({1});
    put_to(*c.steps, 0, 1);
    CHECK(c.host.blocked == 0);  // (0 is not in the group)
    put_to(*c.steps, 1, 2);
    CHECK(c.host.blocked == 1);
    put_to(*c.steps, 1, 3);
    CHECK(c.host.blocked == 1);
    c.host.log.clear();
    c.steps->completed();
    CHECK((c.host.log == Log{"digest 2", "digest 3", "release 2", "release 3"}));
  });

  test::run("a request completes its own call's watches; a changed origin is reported then", [&] {
    Checked& c = *checked[7];
    uint64_t first = put_to(*c.steps, 1, 1);
    uint64_t second = put_to(*c.steps, 1, 2);
    c.host.now[2] = 42;  // changed after the call
    c.host.log.clear();
    c.steps->request_completed(1, second);
    CHECK((c.host.log == Log{"digest 2", "release 2"}));
    CHECK(c.host.reports.size() == 1);
    CHECK(
        !c.host.reports.empty() &&
        c.host.reports[0].starts_with("rma: RMA_CHECK: the origin array of win.put by rank 0 to rank 1, bytes 16-23"));
    c.host.log.clear();
    c.steps->request_completed(1, first);
    CHECK((c.host.log == Log{"digest 1", "release 1"}));
  });
}

int rank_body(int rank, const fork_job::Exchange& exchange) {
  rma::RuntimeOptions options;
  options.rank = rank;
  options.size = kRanks;
  options.provider = "shm";
  options.timeout_seconds = 60;
  auto runtime = std::make_shared<rma::Runtime>(options);
  runtime->connect(exchange(runtime->address()), {"here", "here"});
  auto world = runtime->world();
  VectorClock clock(rank, kRanks);
  std::vector<std::unique_ptr<Checked>> checked;
  for (int number = 0; number < kCases; ++number) checked.push_back(make_checked(*world, clock, number));
  if (rank == 0) cases(checked, clock);
  for (auto& c : checked) {  // (collective: as win.free)
    c->steps->freed("test free");
    c->board->unlock_all();
    c->board->free();
  }
  return rank == 0 ? test::finish() : 0;
}
}  // namespace

int main() {
  std::vector<int> statuses = fork_job::run(kRanks, rank_body);
  int failed = 0;
  for (int rank = 0; rank < kRanks; ++rank) {
    bool ok = WIFEXITED(statuses[rank]) && WEXITSTATUS(statuses[rank]) == 0;
    if (!ok) std::fprintf(stderr, "rank %d failed (status %d)\n", rank, statuses[rank]);
    failed += !ok;
  }
  return failed == 0 ? 0 : 1;
}
