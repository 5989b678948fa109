// SegmentPool: a freed window's memory serves the next window of its size, zeroed, and only
// when nobody can still address it; peers keep the lasting names mapped (PeerMappings).
#include "window/segment_pool.hpp"

#include <sys/stat.h>

#include <cstring>

#include "check.hpp"

namespace {
using rma::SegmentPool;
using rma::SharedSegment;

bool named(const std::string& name) {
  struct stat status;
  return stat(("/dev/shm" + name).c_str(), &status) == 0;
}
}  // namespace

int main() {
  test::run("a freed window's segment serves the next one of its size, zeroed", [] {
    SegmentPool pool;
    auto first = pool.take(4096);
    CHECK(first->lasting());
    std::byte* data = first->data();
    std::string name = first->name();
    std::memset(data, 0xab, 4096);
    first->mark_reusable();
    first.reset();
    CHECK(named(name));  // kept, name and all
    auto second = pool.take(4096);
    CHECK(second->data() == data);
    CHECK(second->name() == name);
    bool zeroed = true;
    for (size_t i = 0; i < 4096; ++i) zeroed = zeroed && second->data()[i] == std::byte{0};
    CHECK(zeroed);
    auto other_size = pool.take(8192);
    CHECK(other_size->data() != data);
  });

  test::run("a segment whose window was not freed is never served again", [] {
    SegmentPool pool;
    auto dropped = pool.take(4096);
    std::string name = dropped->name();
    dropped.reset();  // (no mark_reusable: a peer may still write to it)
    CHECK(!named(name));
    auto next = pool.take(4096);
    CHECK(next->name() != name);
  });

  test::run("a segment still held is not served again", [] {
    SegmentPool pool;
    auto held = pool.take(4096);
    held->mark_reusable();
    auto next = pool.take(4096);
    CHECK(next->data() != held->data());
  });

  test::run("large segments last but are not kept", [] {
    SegmentPool pool;
    auto large = pool.take(SegmentPool::kLargestKept + 4096);
    CHECK(large->lasting());
    std::string name = large->name();
    large->mark_reusable();
    large.reset();
    CHECK(!named(name));
  });

  test::run("the pool keeps a bounded number per size", [] {
    SegmentPool pool;
    std::vector<std::shared_ptr<SharedSegment>> many;
    std::vector<std::string> names;
    for (size_t i = 0; i < SegmentPool::kKeptPerSize + 2; ++i) {
      many.push_back(pool.take(4096));
      many.back()->mark_reusable();
      names.push_back(many.back()->name());
    }
    many.clear();
    size_t still_named = 0;
    for (const auto& name : names) still_named += named(name);
    CHECK(still_named == SegmentPool::kKeptPerSize);
  });

  test::run("the pool's end removes every name it made, held or kept", [] {
    std::shared_ptr<SharedSegment> held;
    std::string kept_name;
    {
      SegmentPool pool;
      held = pool.take(4096);
      auto kept = pool.take(4096);
      kept_name = kept->name();
      kept->mark_reusable();
      kept.reset();
      CHECK(named(held->name()) && named(kept_name));
    }
    CHECK(!named(held->name()));
    CHECK(!named(kept_name));
    held.reset();  // (after its pool: deleted, not kept)
  });

  test::run("a peer's lasting segment stays mapped for the next window", [] {
    SegmentPool owner, peer;
    auto segment = owner.take(4096);
    auto first = peer.open_peer(segment->name(), 4096, true);
    auto again = peer.open_peer(segment->name(), 4096, true);
    CHECK(first == again);
    auto plain = peer.open_peer(segment->name(), 4096, false);
    CHECK(plain != first);
    segment->data()[7] = std::byte{42};
    CHECK(first->data()[7] == std::byte{42});
  });
  return test::finish();
}
