#include "check/pending_memory.hpp"

#include <algorithm>
#include <cctype>

namespace rma::check {

namespace {

const char* const kCompletions =
    "the flush, flush_local, unlock, fence, complete or request wait that completes the call";

std::string rank_of(const Access& access) { return std::to_string(access.origin_rank); }

std::string role(bool result) { return result ? "the result array of " : "the origin array of "; }

// The second call's array shares bytes with the first's, pending, and one is a result.
std::string two_calls_message(const Access& first, bool first_result, const Access& second, bool second_result) {
  if (&first == &second) {  // one call's origin and result (get_accumulate's)
    return "rma: RMA_CHECK: the origin and result arrays of " + describe(first) +
           " share bytes: the library may fill the result while it still reads the origin; give the call two "
           "arrays that do not overlap";
  }
  std::string why =
      first_result && second_result ? "the library may fill each until the call completes, in either order"
      : first_result ? "the library may read the second's origin before or after it fills the first's result"
                     : "the library may still read the first's origin while it fills the second's result";
  return "rma: RMA_CHECK: two calls use the same bytes of one array before the first completed at rank " +
         rank_of(first) + ": " + role(first_result) + describe(first) + "; and " + role(second_result) +
         describe(second) + ". " + static_cast<char>(std::toupper(static_cast<unsigned char>(why[0]))) + why.substr(1) +
         ": complete the first call (" + kCompletions +
         ") before the second, or give each call its "
         "own array";
}

std::string touch_message(const Access& access, bool result, bool store, const std::string& site) {
  std::string what = role(result) + describe(access) + (store ? " was changed at " : " was read at ") + site +
                     " before the call completed at rank " + rank_of(access);
  if (!result) {
    return "rma: RMA_CHECK: " + what + ": the library may read it until " + kCompletions +
           "; change it after that call (or pass a copy)";
  }
  return "rma: RMA_CHECK: " + what + ": the library may fill it until " + kCompletions +
         (store ? "; read or change it only after that call"
                : " (until then it may hold what it held before the call); read it after that call");
}

}  // namespace

template <class Found>
void PendingMemory::overlapping(std::span<const Span> bytes, Found&& found) const {
  if (starts_.empty()) return;
  for (const Span& span : bytes) {
    uint64_t from = span.start > longest_ ? span.start - longest_ : 0;
    auto it = std::lower_bound(starts_.begin(), starts_.end(), from,
                               [](const Start& item, uint64_t start) { return item.start < start; });
    for (; it != starts_.end() && it->start < span.stop; ++it) {
      if (it->stop <= span.start) continue;
      if (found(it->id, entries_[it->id])) return;
    }
  }
}

MemoryId PendingMemory::add(std::span<const Span> bytes, const Access& access, bool result,
                            std::optional<std::string>& conflict) {
  overlapping(bytes, [&](MemoryId, const Entry& other) {
    if (!result && !other.result) return false;  // two reads of one origin
    conflict = two_calls_message(*other.access, other.result, access, result);
    return true;
  });
  MemoryId id;
  if (free_.empty()) {
    id = static_cast<MemoryId>(entries_.size());
    entries_.emplace_back();
  } else {
    id = free_.back();
    free_.pop_back();
  }
  Entry& entry = entries_[id];
  entry.bytes.assign(bytes.begin(), bytes.end());
  entry.access = &access;
  entry.result = result;
  entry.reported = false;
  for (const Span& span : bytes) {
    auto at = std::upper_bound(starts_.begin(), starts_.end(), span.start,
                               [](uint64_t start, const Start& item) { return start < item.start; });
    starts_.insert(at, Start{span.start, span.stop, id});
    longest_ = std::max(longest_, span.stop - span.start);
  }
  return id;
}

bool PendingMemory::remove(MemoryId id) {
  if (id >= entries_.size() || !entries_[id].access) return false;  // (not pending)
  Entry& entry = entries_[id];
  for (const Span& span : entry.bytes) {
    auto it = std::lower_bound(starts_.begin(), starts_.end(), span.start,
                               [](const Start& item, uint64_t start) { return item.start < start; });
    while (it != starts_.end() && it->start == span.start && it->id != id) ++it;
    if (it != starts_.end() && it->start == span.start) starts_.erase(it);
  }
  bool reported = entry.reported;
  entry.bytes.clear();
  entry.access = nullptr;
  free_.push_back(id);
  if (starts_.empty()) longest_ = 0;
  return reported;
}

std::optional<std::string> PendingMemory::touched(std::span<const Span> bytes, bool store, const std::string& site) {
  std::optional<std::string> report;
  overlapping(bytes, [&](MemoryId id, const Entry& entry) {
    if ((!entry.result && !store) || entry.reported) return false;  // reading an origin is allowed
    entries_[id].reported = true;
    report = touch_message(*entry.access, entry.result, store, site);
    return true;
  });
  return report;
}

bool PendingMemory::uses(std::span<const Span> bytes) const {
  bool used = false;
  overlapping(bytes, [&](MemoryId, const Entry&) { return used = true; });
  return used;
}

bool PendingMemory::empty() const {
  return starts_.empty() && std::all_of(entries_.begin(), entries_.end(), [](const Entry& e) { return !e.access; });
}

}  // namespace rma::check
