// RMA_CHECK's rules (check/access.hpp, check/journal.hpp): which accesses conflict, which are
// ordered by the clock, what the journal reports, and accesses through a message unchanged.
#include <memory>
#include <string>
#include <vector>

#include "base/errors.hpp"
#include "check.hpp"
#include "check/access.hpp"
#include "check/journal.hpp"

namespace {
using namespace rma::check;

ClockStamp stamp(std::vector<int64_t> entries) { return std::make_shared<const std::vector<int64_t>>(entries); }

Access make(int origin, AccessKind kind, uint64_t start, uint64_t stop, std::string op = "", std::string dtype = "") {
  Access access;
  access.origin = origin;
  access.origin_rank = origin;
  access.target_rank = 0;
  access.call = kind == AccessKind::Write ? "win.put" : kind == AccessKind::Read ? "win.get" : "win.accumulate";
  access.kind = kind;
  access.op = std::move(op);
  access.element_bytes = dtype.empty() ? 0 : dtype.ends_with("32") ? 4 : 8;
  access.dtype = std::move(dtype);
  access.spans = {{start, stop}};
  access.clock = stamp({0, 0, 0});
  access.site = "program.py:" + std::to_string(origin + 10);
  access.epoch = {&rma::check::interned("fence"), 1, -1};
  return access;
}

bool conflicts(const Access& a, const Access& b) { return conflict(a, b).has_value() && conflict(b, a).has_value(); }
}  // namespace

int main() {
  test::run("a put conflicts with every other access; reads never with reads", [] {
    Access put = make(1, AccessKind::Write, 0, 8);
    CHECK(conflicts(put, make(2, AccessKind::Write, 0, 8)));
    CHECK(conflicts(put, make(2, AccessKind::Read, 0, 8)));
    CHECK(conflicts(put, make(2, AccessKind::Update, 0, 8, "SUM", "int64")));
    CHECK(conflicts(put, make(2, AccessKind::AtomicRead, 0, 8, "NO_OP", "int64")));
    CHECK(!conflict(make(1, AccessKind::Read, 0, 8), make(2, AccessKind::Read, 0, 8)));
    CHECK(!conflict(make(1, AccessKind::Read, 0, 8), make(2, AccessKind::AtomicRead, 0, 8, "NO_OP", "int64")));
  });

  test::run("a get conflicts with an accumulate that updates, not with one that only reads", [] {
    Access get = make(1, AccessKind::Read, 0, 8);
    CHECK(conflicts(get, make(2, AccessKind::Update, 0, 8, "SUM", "int64")));
    CHECK(conflict(get, make(2, AccessKind::Update, 0, 8, "SUM", "int64"))->find("a get conflicts") == 0);
  });

  test::run("accumulates conflict only with another op or dtype, from another origin", [] {
    Access sum = make(1, AccessKind::Update, 0, 8, "SUM", "int64");
    CHECK(!conflict(sum, make(2, AccessKind::Update, 0, 8, "SUM", "int64")));
    CHECK(conflicts(sum, make(2, AccessKind::Update, 0, 8, "MAX", "int64")));
    CHECK(conflict(sum, make(2, AccessKind::Update, 0, 8, "MAX", "int64"))->find("different ops (SUM, MAX)") !=
          std::string::npos);
    CHECK(conflicts(sum, make(2, AccessKind::Update, 0, 8, "SUM", "float64")));
    CHECK(conflicts(sum, make(2, AccessKind::AtomicRead, 0, 8, "NO_OP", "float64")));
    CHECK(!conflict(sum, make(2, AccessKind::AtomicRead, 0, 8, "NO_OP", "int64")));
    CHECK(!conflict(sum, make(1, AccessKind::Update, 0, 8, "MAX", "int64")));  // one origin's are ordered
  });

  test::run("accumulates of one op and dtype conflict where their elements do not match", [] {
    // disp_unit 1: int32s at byte 0 and at byte 1 share bytes 1-3 but no element.
    Access at0 = make(1, AccessKind::Update, 0, 8, "SUM", "int32");
    auto why = conflict(at0, make(2, AccessKind::Update, 1, 9, "SUM", "int32"));
    CHECK(why && *why ==
                     "accumulates that overlap without matching elements (int32 at byte offsets 0 and 1) are not "
                     "atomic with each other");
    CHECK(conflicts(at0, make(2, AccessKind::AtomicRead, 6, 10, "NO_OP", "int32")));
    CHECK(!conflict(at0, make(2, AccessKind::Update, 4, 12, "SUM", "int32")));  // elements 1 and 2 of both
    CHECK(!conflict(at0, make(2, AccessKind::Update, 8, 12, "SUM", "int32")));  // no shared byte
    CHECK(!conflict(at0, make(1, AccessKind::Update, 2, 10, "SUM", "int32")));  // one origin's are ordered
    Access strided = at0;
    strided.spans = {{0, 4}, {12, 16}, {26, 30}};  // the third span off the grid of the other's
    CHECK(!conflict(strided, make(2, AccessKind::Update, 12, 16, "SUM", "int32")));
    CHECK(conflicts(strided, make(2, AccessKind::Update, 24, 28, "SUM", "int32")));
  });

  test::run("spans: strided elements merge, overlap finds the first shared bytes", [] {
    std::vector<std::pair<uint64_t, int64_t>> dims{{3, 16}};
    Spans strided = strided_spans(8, 8, dims);
    CHECK((strided == Spans{{8, 16}, {24, 32}, {40, 48}}));
    std::vector<std::pair<uint64_t, int64_t>> touching{{4, 8}};
    CHECK((strided_spans(0, 8, touching) == Spans{{0, 32}}));
    std::vector<std::pair<uint64_t, int64_t>> reversed{{2, -8}};
    CHECK((strided_spans(8, 8, reversed) == Spans{{0, 16}}));
    CHECK(!overlap(strided, Spans{{16, 24}}));
    auto shared = overlap(strided, Spans{{20, 28}});
    CHECK(shared && shared->start == 24 && shared->stop == 28);
  });

  test::run("ordered: one origin's by its calls, another's by the clock", [] {
    Access first = make(1, AccessKind::Write, 0, 8);
    first.tick = 3;
    first.done_tick = 5;
    first.done = 2;  // completed by rank 1's call 5, made known by its publication 2
    Access later = make(1, AccessKind::Write, 0, 8);
    later.tick = 6;
    CHECK(ordered(first, later));
    later.tick = 5;
    CHECK(!ordered(first, later));
    Access other = make(2, AccessKind::Read, 0, 8);
    other.clock = stamp({0, 1, 0});
    CHECK(!ordered(first, other));
    other.clock = stamp({0, 2, 0});
    CHECK(ordered(first, other));
  });

  test::run("the journal reports two origins' unordered conflict once, naming both", [] {
    Journal journal("window 1");
    Access put = make(1, AccessKind::Write, 0, 16);
    put.done_tick = 1;
    put.done = 1;
    CHECK(!journal.add({put}));
    Access get = make(2, AccessKind::Read, 8, 16);
    auto found = journal.add({get});
    CHECK(found.has_value());
    CHECK(found && found->find("conflicting accesses to window 1 on rank 0, bytes 8-15") != std::string::npos);
    CHECK(found && found->find("win.put (") == std::string::npos);
    CHECK(found && found->find("win.put by rank 1 to rank 0, bytes 0-15, in its fence epoch 1, at program.py:11") !=
                       std::string::npos);
    CHECK(found && found->find("win.get by rank 2 to rank 0, bytes 8-15") != std::string::npos);
  });

  test::run("the journal says nothing of accesses the clock orders, or of disjoint bytes", [] {
    Journal journal("window 1");
    Access put = make(1, AccessKind::Write, 0, 8);
    put.done_tick = 1;
    put.done = 1;
    CHECK(!journal.add({put}));
    Access after = make(2, AccessKind::Read, 0, 8);
    after.clock = stamp({0, 1, 0});  // rank 2 learnt of rank 1's completion first
    CHECK(!journal.add({after}));
    CHECK(!journal.add({make(3, AccessKind::Write, 8, 16)}));
    journal.clear();  // a fence: everything before it is ordered before what follows
    CHECK(!journal.add({make(2, AccessKind::Write, 0, 8)}));
  });

  test::run("the journal keeps the newest accesses of one shape", [] {
    Journal journal("window 1");
    for (int i = 0; i < 40; ++i) {
      Access update = make(1, AccessKind::Update, 0, 8, "SUM", "int64");
      update.tick = i;
      update.done_tick = i;
      update.done = i + 1;
      CHECK(!journal.add({update}));
    }
    // Rank 2's clock holds rank 1's publication 30: only the updates completed after it are
    // unordered, and the journal still holds them (it let the oldest go).
    Access get = make(2, AccessKind::Read, 0, 8);
    get.clock = stamp({0, 30, 0});
    CHECK(journal.add({get}).has_value());
  });

  test::run("accesses travel through a message unchanged", [] {
    Access a = make(1, AccessKind::Update, 0, 8, "SUM", "int64");
    a.spans = {{0, 8}, {16, 24}};
    a.tick = 7;
    a.done_tick = 9;
    a.done = 4;
    Access b = make(1, AccessKind::Write, 32, 40);
    b.clock = a.clock;  // shared: written once
    Access c = make(2, AccessKind::Read, 0, 4);
    c.clock = stamp({5, 6, 7});
    std::vector<const Access*> list{&a, &b, &c};
    std::vector<std::byte> bytes;
    encode(list, bytes);
    std::vector<Access> back = decode(bytes);
    CHECK(back.size() == 3);
    CHECK(back.size() == 3 && back[0] == a && back[1] == b && back[2] == c);
    bytes.pop_back();
    CHECK_THROWS(rma::RmaError, "truncated", decode(bytes));
  });

  return test::finish();
}
