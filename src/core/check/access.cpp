#include "check/access.hpp"

#include <algorithm>
#include <cctype>
#include <mutex>
#include <set>

#include "base/wire.hpp"

namespace rma::check {

bool Access::operator==(const Access& other) const {
  return origin == other.origin && origin_rank == other.origin_rank && target_rank == other.target_rank &&
         call == other.call && kind == other.kind && op == other.op && dtype == other.dtype &&
         element_bytes == other.element_bytes && spans == other.spans &&
         (clock == other.clock || (clock && other.clock && *clock == *other.clock)) && tick == other.tick &&
         done_tick == other.done_tick && done == other.done && site == other.site && epoch == other.epoch;
}

Spans merged(std::vector<Span> runs) {
  merge_in_place(runs);
  return runs;
}

void merge_in_place(std::vector<Span>& runs) {
  if (runs.size() > 1) {
    std::sort(runs.begin(), runs.end(), [](const Span& a, const Span& b) { return a.start < b.start; });
  }
  size_t kept = 0;  // runs[0, kept) are the spans so far
  for (const Span& run : runs) {
    if (run.start == run.stop) continue;
    if (kept > 0 && run.start <= runs[kept - 1].stop) {
      runs[kept - 1].stop = std::max(runs[kept - 1].stop, run.stop);
    } else {
      runs[kept++] = run;
    }
  }
  runs.resize(kept);
}

Spans strided_spans(uint64_t start, uint64_t itemsize, std::span<const std::pair<uint64_t, int64_t>> dims) {
  std::vector<int64_t> offsets{static_cast<int64_t>(start)};
  for (const auto& [count, stride] : dims) {
    std::vector<int64_t> next;
    next.reserve(offsets.size() * count);
    for (int64_t offset : offsets) {
      for (uint64_t i = 0; i < count; ++i) next.push_back(offset + static_cast<int64_t>(i) * stride);
    }
    offsets = std::move(next);
  }
  std::vector<Span> runs;
  runs.reserve(offsets.size());
  for (int64_t offset : offsets) {
    runs.push_back({static_cast<uint64_t>(offset), static_cast<uint64_t>(offset) + itemsize});
  }
  return merged(std::move(runs));
}

std::string Epoch::text() const {
  std::string name = kind != nullptr ? *kind + " epoch " : "epoch ";
  name += std::to_string(number);
  if (on_rank >= 0) name += " on rank " + std::to_string(on_rank);
  return name;
}

bool Epoch::operator==(const Epoch& other) const {
  return number == other.number && on_rank == other.on_rank &&
         (kind == other.kind || (kind != nullptr && other.kind != nullptr && *kind == *other.kind));
}

const std::string& interned(std::string_view name) {
  static std::mutex mutex;
  static auto* names = new std::set<std::string, std::less<>>();  // (its strings never move)
  std::lock_guard lock(mutex);
  auto found = names->find(name);
  if (found == names->end()) found = names->emplace(name).first;
  return *found;
}

std::vector<uint64_t> bounds_of(const Spans& spans) {
  std::vector<uint64_t> bounds;
  bounds.reserve(spans.size() * 2);
  for (const Span& span : spans) {
    bounds.push_back(span.start);
    bounds.push_back(span.stop);
  }
  return bounds;
}

std::optional<Span> overlap(const Spans& a, const Spans& b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    uint64_t start = std::max(a[i].start, b[j].start);
    uint64_t stop = std::min(a[i].stop, b[j].stop);
    if (start < stop) return Span{start, stop};
    if (a[i].stop <= b[j].stop) {
      ++i;
    } else {
      ++j;
    }
  }
  return std::nullopt;
}

namespace {
bool reads_only(AccessKind kind) { return kind == AccessKind::Read || kind == AccessKind::AtomicRead; }

// Whether two accumulates of one dtype meet element on element wherever they share bytes: each
// span of an accumulate is whole elements from its start, so two shared spans must start a
// whole number of elements apart.
bool same_elements(const Access& a, const Access& b) {
  uint64_t size = a.element_bytes;
  if (size <= 1) return true;
  size_t i = 0, j = 0;
  while (i < a.spans.size() && j < b.spans.size()) {
    const Span& x = a.spans[i];
    const Span& y = b.spans[j];
    if (std::max(x.start, y.start) < std::min(x.stop, y.stop) &&
        (x.start > y.start ? x.start - y.start : y.start - x.start) % size != 0) {
      return false;
    }
    if (x.stop <= y.stop) {
      ++i;
    } else {
      ++j;
    }
  }
  return true;
}
}  // namespace

std::optional<std::string> conflict(const Access& a, const Access& b) {
  if (reads_only(a.kind) && reads_only(b.kind)) return std::nullopt;
  if (a.kind == AccessKind::Write || b.kind == AccessKind::Write) {
    return "a put conflicts with every other access to the same bytes";
  }
  if (a.kind == AccessKind::Read || b.kind == AccessKind::Read) {  // a get meets an accumulate that updates
    return "a get conflicts with an accumulate that updates the same bytes";
  }
  if (a.origin == b.origin) return std::nullopt;  // accumulates of one origin are ordered
  if (a.dtype != b.dtype) {
    return "accumulates of different dtypes (" + a.dtype + ", " + b.dtype + ") are not atomic with each other";
  }
  if (!same_elements(a, b)) {
    return "accumulates that overlap without matching elements (" + a.dtype + " at byte offsets " +
           std::to_string(a.spans.front().start) + " and " + std::to_string(b.spans.front().start) +
           ") are not atomic with each other";
  }
  if (a.kind != b.kind) return std::nullopt;  // an update and a NO_OP read: atomic with each other
  if (a.op != b.op) {
    return "accumulates with different ops (" + a.op + ", " + b.op + ") are not atomic with each other";
  }
  return std::nullopt;
}

bool ordered(const Access& first, const Access& second) {
  if (first.origin == second.origin) return first.done_tick < second.tick;
  const auto& clock = *second.clock;
  return static_cast<size_t>(first.origin) < clock.size() && clock[first.origin] >= first.done;
}

std::string describe(const Access& access) {
  uint64_t start = access.spans.empty() ? 0 : access.spans.front().start;
  uint64_t stop = access.spans.empty() ? 0 : access.spans.back().stop;
  std::string op = access.op.empty() ? "" : " (" + access.op + ")";
  bool own = access.call.ends_with("win.local");
  std::string whose =
      own ? "rank " + std::to_string(access.origin_rank)
          : "rank " + std::to_string(access.origin_rank) + " to rank " + std::to_string(access.target_rank);
  return access.call + op + " by " + whose + ", bytes " + std::to_string(start) + "-" +
         std::to_string(static_cast<int64_t>(stop) - 1) + ", in its " + access.epoch.text() + ", at " + access.site;
}

std::string conflict_message(const std::string& window, const Access& first, const Access& second,
                             const std::string& why) {
  Span shared = overlap(first.spans, second.spans).value_or(Span{0, 0});
  std::string reason = why;
  if (!reason.empty()) reason[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(reason[0])));
  return "rma: RMA_CHECK: conflicting accesses to " + window + " on rank " + std::to_string(second.target_rank) +
         ", bytes " + std::to_string(shared.start) + "-" + std::to_string(static_cast<int64_t>(shared.stop) - 1) +
         ", that nothing orders: " + describe(first) + "; and " + describe(second) + ". " + reason +
         ": order them with a flush, unlock, fence or complete/wait (from different ranks, then a barrier or a "
         "message too)";
}

namespace {

void append_text(std::vector<std::byte>& out, const std::string& text) {
  wire::append<uint32_t>(out, static_cast<uint32_t>(text.size()));
  auto bytes = reinterpret_cast<const std::byte*>(text.data());
  out.insert(out.end(), bytes, bytes + text.size());
}

std::string take_text(std::span<const std::byte> data, size_t& position) {
  auto size = wire::take<uint32_t>(data, position);
  auto bytes = wire::take_bytes(data, position, size);
  return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

}  // namespace

// Layout: count, then per access its fields; a clock is written whole only when it differs
// from the previous access's (a flag says which), as most accesses of a batch share one.
void encode(std::span<const Access* const> accesses, std::vector<std::byte>& out) {
  size_t size = sizeof(uint32_t);  // (reserved at once: appending field by field regrew it)
  for (const Access* access : accesses) {
    size += 128 + access->call.size() + access->op.size() + access->dtype.size() + access->site.size() +
            (access->epoch.kind != nullptr ? access->epoch.kind->size() : 0) + access->spans.size() * sizeof(Span) +
            access->clock->size() * sizeof(int64_t);
  }
  out.reserve(out.size() + size);
  wire::append<uint32_t>(out, static_cast<uint32_t>(accesses.size()));
  const ClockStamp* previous = nullptr;
  for (const Access* access : accesses) {
    wire::append(out, access->origin);
    wire::append(out, access->origin_rank);
    wire::append(out, access->target_rank);
    append_text(out, access->call);
    wire::append(out, static_cast<uint8_t>(access->kind));
    append_text(out, access->op);
    append_text(out, access->dtype);
    wire::append(out, access->element_bytes);
    wire::append<uint32_t>(out, static_cast<uint32_t>(access->spans.size()));
    for (const Span& span : access->spans) {
      wire::append(out, span.start);
      wire::append(out, span.stop);
    }
    bool same = previous != nullptr && (*previous == access->clock || **previous == *access->clock);
    wire::append<uint8_t>(out, same ? 1 : 0);
    if (!same) {
      wire::append<uint32_t>(out, static_cast<uint32_t>(access->clock->size()));
      for (int64_t entry : *access->clock) wire::append(out, entry);
      previous = &access->clock;
    }
    wire::append(out, access->tick);
    wire::append(out, access->done_tick);
    wire::append(out, access->done);
    append_text(out, access->site);
    append_text(out, access->epoch.kind != nullptr ? *access->epoch.kind : std::string());
    wire::append(out, access->epoch.number);
    wire::append(out, access->epoch.on_rank);
  }
}

std::vector<Access> decode(std::span<const std::byte> data) {
  size_t position = 0;
  auto count = wire::take<uint32_t>(data, position);
  std::vector<Access> accesses;
  accesses.reserve(std::min<size_t>(count, data.size()));
  ClockStamp clock;
  const std::string* last_kind = nullptr;
  for (uint32_t n = 0; n < count; ++n) {
    Access access;
    access.origin = wire::take<int32_t>(data, position);
    access.origin_rank = wire::take<int32_t>(data, position);
    access.target_rank = wire::take<int32_t>(data, position);
    access.call = take_text(data, position);
    auto access_kind = wire::take<uint8_t>(data, position);
    if (access_kind > static_cast<uint8_t>(AccessKind::AtomicRead)) {
      throw MalformedMessage("an access of no known kind");
    }
    access.kind = static_cast<AccessKind>(access_kind);
    access.op = take_text(data, position);
    access.dtype = take_text(data, position);
    access.element_bytes = wire::take<uint32_t>(data, position);
    auto spans = wire::take<uint32_t>(data, position);
    for (uint32_t s = 0; s < spans; ++s) {
      uint64_t start = wire::take<uint64_t>(data, position);
      access.spans.push_back({start, wire::take<uint64_t>(data, position)});
    }
    if (wire::take<uint8_t>(data, position) == 0) {
      auto size = wire::take<uint32_t>(data, position);
      std::vector<int64_t> entries;
      for (uint32_t e = 0; e < size; ++e) entries.push_back(wire::take<int64_t>(data, position));
      clock = std::make_shared<const std::vector<int64_t>>(std::move(entries));
    }
    if (!clock) throw MalformedMessage("an access without a clock in a message of RMA_CHECK");
    access.clock = clock;
    access.tick = wire::take<int64_t>(data, position);
    access.done_tick = wire::take<int64_t>(data, position);
    access.done = wire::take<int64_t>(data, position);
    access.site = take_text(data, position);
    std::string kind = take_text(data, position);  // (most accesses of a batch share one)
    if (!kind.empty() && (last_kind == nullptr || *last_kind != kind)) last_kind = &interned(kind);
    access.epoch.kind = kind.empty() ? nullptr : last_kind;
    access.epoch.number = wire::take<int64_t>(data, position);
    access.epoch.on_rank = wire::take<int32_t>(data, position);
    accesses.push_back(std::move(access));
  }
  return accesses;
}

}  // namespace rma::check
