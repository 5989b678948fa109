// The bytes that pending calls' arrays use (check/pending_memory.hpp): which pairs of calls
// into one buffer are reported, which loads and stores of a pending array are, once each, and
// what the reports say.
#include <memory>
#include <string>

#include "check.hpp"
#include "check/pending_memory.hpp"

namespace {
using namespace rma::check;

AccessRef call(const char* name, AccessKind kind, const char* site) {
  auto access = std::make_shared<Access>();
  access->origin = access->origin_rank = 1;
  access->target_rank = 0;
  access->call = name;
  access->kind = kind;
  access->spans = {{0, 8}};
  access->site = site;
  access->epoch = {&interned("fence"), 1, -1};
  return access;
}

const AccessRef get = call("win.get", AccessKind::Read, "program.py:7");
const AccessRef put = call("win.put", AccessKind::Write, "program.py:8");

bool contains(const std::optional<std::string>& text, const std::string& part) {
  return text && text->find(part) != std::string::npos;
}
}  // namespace

int main() {
  test::run("a read of a pending result names the call and the read", [] {
    PendingMemory memory;
    std::optional<std::string> conflict;
    memory.add(Spans{{4096, 4104}}, *get, true, conflict);
    CHECK(!conflict);
    CHECK(!memory.touched(Spans{{4088, 4096}}, false, "program.py:9"));  // the bytes before
    CHECK(!memory.touched(Spans{{4104, 4112}}, true, "program.py:9"));   // and after
    auto found = memory.touched(Spans{{4100, 4101}}, false, "program.py:9");
    CHECK(found && *found ==
                       "rma: RMA_CHECK: the result array of win.get by rank 1 to rank 0, bytes 0-7, in its fence epoch "
                       "1, at program.py:7 was read at program.py:9 before the call completed at rank 1: the library "
                       "may fill it until the flush, flush_local, unlock, fence, complete or request wait that "
                       "completes the call (until then it may hold what it held before the call); read it after that "
                       "call");
    CHECK(!memory.touched(Spans{{4096, 4104}}, false, "program.py:10"));  // told once
  });

  test::run("an origin may be read while pending, not changed", [] {
    PendingMemory memory;
    std::optional<std::string> conflict;
    MemoryId id = memory.add(Spans{{0, 64}}, *put, false, conflict);
    CHECK(!memory.touched(Spans{{0, 64}}, false, "program.py:9"));
    auto found = memory.touched(Spans{{8, 16}}, true, "program.py:10");
    CHECK(contains(found, "the origin array of win.put by rank 1 to rank 0") &&
          contains(found, "was changed at program.py:10 before the call completed at rank 1") &&
          contains(found, "(or pass a copy)"));
    CHECK(memory.remove(id));  // (told: its completion says nothing more)
    CHECK(memory.empty() && !memory.uses(Spans{{0, 64}}));
  });

  test::run("two calls into one buffer: any pair with a result, at the second call", [] {
    for (auto [first_result, second_result] : {std::pair{true, true}, {true, false}, {false, true}, {false, false}}) {
      PendingMemory memory;
      std::optional<std::string> conflict;
      memory.add(Spans{{0, 8}, {16, 24}}, *(first_result ? get : put), first_result, conflict);
      memory.add(Spans{{20, 28}}, *(first_result ? put : get), second_result, conflict);
      CHECK(conflict.has_value() == (first_result || second_result));
      CHECK(!conflict || conflict->starts_with("rma: RMA_CHECK: two calls use the same bytes of one array before "
                                               "the first completed at rank 1: "));
      CHECK(!conflict || contains(conflict, "complete the first call (the flush"));
    }
  });

  test::run("one call's origin and result sharing bytes are named as one call's", [] {
    PendingMemory memory;
    std::optional<std::string> conflict;
    memory.add(Spans{{0, 8}}, *get, true, conflict);
    memory.add(Spans{{4, 12}}, *get, false, conflict);
    CHECK(conflict && conflict->starts_with("rma: RMA_CHECK: the origin and result arrays of win.get by rank 1") &&
          contains(conflict, "give the call two arrays that do not overlap"));
  });

  test::run("overlaps are found past a long span and among many short ones", [] {
    PendingMemory memory;
    std::optional<std::string> conflict;
    MemoryId long_one = memory.add(Spans{{0, 1 << 20}}, *get, true, conflict);
    for (uint64_t i = 0; i < 1000; ++i)
      memory.add(Spans{{(2 << 20) + 16 * i, (2 << 20) + 16 * i + 8}}, *put, false, conflict);
    CHECK(!conflict);
    CHECK(memory.uses(Spans{{(1 << 20) - 1, 1 << 20}}));  // the long span's last byte
    CHECK(!memory.uses(Spans{{1 << 20, 2 << 20}}));
    CHECK(memory.uses(Spans{{(2 << 20) + 16 * 500 + 7, (2 << 20) + 16 * 500 + 9}}));
    CHECK(!memory.uses(Spans{{(2 << 20) + 16 * 500 + 8, (2 << 20) + 16 * 500 + 16}}));  // between two
    CHECK(!memory.remove(long_one));
    CHECK(!memory.uses(Spans{{0, 1 << 20}}));
    CHECK(!memory.remove(long_one));  // (gone)
  });

  return test::finish();
}
