// RMA_CHECK's watches of origin and result arrays (check/array_watches.hpp) and the digest they
// compare (check/byte_digest.hpp): which completion finishes which watch, in what order the
// holder is asked to digest, deliver and release, and what a change is reported as.
#include <cstddef>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "check.hpp"
#include "check/array_watches.hpp"
#include "check/byte_digest.hpp"

namespace {
using namespace rma::check;

// Arrays as the test has them: a digest by slot (as the array is now), and a log of what the
// watches asked.
struct Holder final : ArrayHolder {
  std::map<ArraySlot, uint64_t> now;
  std::vector<std::string> log;
  bool fail_digest = false;

  uint64_t digest(ArraySlot slot) override {
    log.push_back("digest " + std::to_string(slot));
    if (fail_digest) throw std::runtime_error("no digest");
    return now[slot];
  }
  // Each slot's array at an address of its own unless `memory_of` says otherwise.
  std::map<ArraySlot, Spans> memory_of;
  void memory(ArraySlot slot, Spans& bytes) override {
    auto found = memory_of.find(slot);
    bytes = found != memory_of.end() ? found->second : Spans{{1000 * (slot + 1), 1000 * (slot + 1) + 8}};
  }
  void deliver(ArraySlot slot) override { log.push_back("deliver " + std::to_string(slot)); }
  void release(ArraySlot slot) override { log.push_back("release " + std::to_string(slot)); }
};

AccessRef put_to(int target) {
  auto access = std::make_shared<Access>();
  access->origin = access->origin_rank = 0;
  access->target_rank = target;
  access->call = "win.put";
  access->kind = AccessKind::Write;
  access->spans = {{8, 16}};
  access->site = "program.py:7";
  access->epoch = {&interned("lock_all"), 2, -1};
  return access;
}

// A watch of slot's array (digest 100 + slot at the call) by call `serial` to target.
ArrayWatch watch(int target, uint64_t serial, ArraySlot slot, bool result = false) {
  return {target, serial, slot, 100 + slot, put_to(target), result};
}

// Watches of slots 1 to 4: serial 1 to target 1, 2 to target 0, 3 to target 1 (origin and
// result, slots 3 and 4); every array unchanged.
void watch_four(ArrayWatches& watches, Holder& holder) {
  watches.add(watch(1, 1, 1));
  watches.add(watch(0, 2, 2));
  watches.add(watch(1, 3, 3));
  watches.add(watch(1, 3, 4, true));
  for (ArraySlot slot = 1; slot <= 4; ++slot) holder.now[slot] = 100 + slot;
}

using Log = std::vector<std::string>;
}  // namespace

int main() {
  test::run("the digest sees a change of any one byte, and of the length", [] {
    std::vector<std::byte> bytes(1003);  // 15 blocks of 64, 5 words, 3 bytes
    for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<std::byte>(i * 7);
    uint64_t before = digest_of(bytes);
    CHECK(digest_of(bytes) == before);
    int missed = 0;
    for (size_t i = 0; i < bytes.size(); ++i) {
      bytes[i] ^= std::byte{1};
      missed += digest_of(bytes) == before;
      bytes[i] ^= std::byte{1};
    }
    CHECK(missed == 0);
    CHECK(digest_of(std::span(bytes).first(1002)) != before);
    std::vector<std::byte> zeros(16);
    CHECK(digest_of(std::span(zeros).first(8)) != digest_of(zeros));
  });

  test::run("a completion at targets finishes their calls' watches only, in call order", [] {
    Holder holder;
    PendingMemory memory;
    ArrayWatches watches(holder, memory);
    watch_four(watches, holder);
    const int one[] = {1};
    CHECK(!watches.finish_targets(one));
    CHECK((holder.log == Log{"digest 1", "digest 3", "digest 4", "deliver 4", "release 1", "release 3", "release 4"}));
    CHECK(watches.size() == 1);
    holder.log.clear();
    CHECK(!watches.finish_targets(one));  // (finished once)
    CHECK(holder.log.empty());
    const int zero[] = {0};
    CHECK(!watches.finish_targets(zero));
    CHECK((holder.log == Log{"digest 2", "release 2"}));
    CHECK(watches.size() == 0);
  });

  test::run("a request finishes its own call's watches; everything finishes the rest", [] {
    Holder holder;
    PendingMemory memory;
    ArrayWatches watches(holder, memory);
    watch_four(watches, holder);
    CHECK(!watches.finish_request(1, 2));  // (serial 2 went to target 0)
    CHECK(holder.log.empty());
    CHECK(!watches.finish_request(1, 3));
    CHECK((holder.log == Log{"digest 3", "digest 4", "deliver 4", "release 3", "release 4"}));
    holder.log.clear();
    CHECK(!watches.finish_all());
    CHECK((holder.log == Log{"digest 1", "digest 2", "release 1", "release 2"}));
    CHECK(watches.size() == 0);
  });

  test::run("every array is compared before any result is filled", [] {
    // Two calls that fill one array (an error too) must not make each other's change.
    Holder holder;
    PendingMemory memory;
    ArrayWatches watches(holder, memory);
    watches.add(watch(1, 1, 1, true));
    watches.add(watch(1, 2, 2, true));
    holder.now = {{1, 101}, {2, 102}};
    CHECK(!watches.finish_all());
    CHECK((holder.log == Log{"digest 1", "digest 2", "deliver 1", "deliver 2", "release 1", "release 2"}));
  });

  test::run("the first array found changed is reported; results are filled all the same", [] {
    Holder holder;
    PendingMemory memory;
    ArrayWatches watches(holder, memory);
    watch_four(watches, holder);
    holder.now[3] = 0;  // serial 3's origin and result both changed
    holder.now[4] = 0;
    const int one[] = {1};
    auto found = watches.finish_targets(one);
    CHECK(found.has_value());
    CHECK(found && *found ==
                       "rma: RMA_CHECK: the origin array of win.put by rank 0 to rank 1, bytes 8-15, in its lock_all "
                       "epoch 2, at program.py:7 changed before the call completed at rank 0: the library may read it "
                       "until the flush, flush_local, unlock, fence, complete or request wait that completes the call; "
                       "change it after that call (or pass a copy)");
    // (Once one is found, the others are not digested: one report is all the user sees.)
    CHECK((holder.log == Log{"digest 1", "digest 3", "deliver 4", "release 1", "release 3", "release 4"}));
  });

  test::run("a changed result array is reported as one", [] {
    Holder holder;
    PendingMemory memory;
    ArrayWatches watches(holder, memory);
    watches.add(watch(2, 1, 5, true));
    auto found = watches.finish_all();
    CHECK(found && found->starts_with("rma: RMA_CHECK: the result array of win.put by rank 0 to rank 2"));
    CHECK(found && found->ends_with(": the library may fill it until the flush, flush_local, unlock, fence, complete "
                                    "or request wait that completes the call; read or change it only after that call"));
  });

  test::run("a digest that fails still releases every finishing slot", [] {
    Holder holder;
    PendingMemory memory;
    ArrayWatches watches(holder, memory);
    watch_four(watches, holder);
    holder.fail_digest = true;
    const int one[] = {1};
    CHECK_THROWS(std::runtime_error, "no digest", watches.finish_targets(one));
    CHECK((holder.log == Log{"digest 1", "release 1", "release 3", "release 4"}));
    CHECK(watches.size() == 1);
  });

  test::run("an array that shares bytes with a pending result is reported as it is watched", [] {
    Holder holder;
    PendingMemory memory;
    ArrayWatches watches(holder, memory);
    holder.memory_of = {{1, {{0, 16}}}, {2, {{8, 24}}}, {3, {{8, 24}}}, {4, {{100, 108}}}};
    for (ArraySlot slot = 1; slot <= 4; ++slot) holder.now[slot] = 100 + slot;  // (unchanged)
    CHECK(!watches.add(watch(1, 1, 2)));                                        // an origin
    CHECK(!watches.add(watch(1, 2, 3)));             // another origin on the same bytes: two reads
    auto found = watches.add(watch(1, 3, 1, true));  // a result over both
    CHECK(found && found->starts_with("rma: RMA_CHECK: two calls use the same bytes of one array"));
    CHECK(!watches.add(watch(1, 4, 4, true)));  // elsewhere
    CHECK(memory.uses(Spans{{0, 1}}) && memory.uses(Spans{{20, 30}}) && !memory.uses(Spans{{24, 100}}));
    CHECK(!watches.finish_all());
    CHECK(memory.empty());
  });

  test::run("a change told at its line is not told again by the completion's digest", [] {
    Holder holder;
    PendingMemory memory;
    ArrayWatches watches(holder, memory);
    watches.add(watch(1, 1, 1, true));
    watches.add(watch(1, 2, 2, true));
    auto told = memory.touched(Spans{{2000, 2001}}, true, "program.py:9");
    CHECK(told && told->find("was changed at program.py:9") != std::string::npos);
    holder.now = {{1, 0}, {2, 0}};      // both changed
    auto found = watches.finish_all();  // (slot 1's array, at 2000, was told: only slot 2's is new)
    CHECK(found && found->starts_with("rma: RMA_CHECK: the result array of win.put by rank 0 to rank 1") &&
          found->find(" changed before the call completed") != std::string::npos);
    CHECK((holder.log == Log{"digest 2", "deliver 1", "deliver 2", "release 1", "release 2"}));
    holder.log.clear();
    watches.add(watch(1, 3, 1, true));
    CHECK(memory.touched(Spans{{2000, 2001}}, true, "program.py:9"));
    holder.now = {{1, 0}};
    CHECK(!watches.finish_all());  // told at its line
    CHECK((holder.log == Log{"deliver 1", "release 1"}));
  });

  return test::finish();
}
