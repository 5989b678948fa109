#include "check/journal.hpp"

#include <algorithm>

namespace rma::check {

std::optional<std::string> Journal::add(std::vector<Access> accesses) {
  std::optional<std::string> found;
  for (Access& access : accesses) {
    if (!found) found = check(access);
    Shape shape{access.origin, access.site, access.kind, access.op, access.dtype, bounds_of(access.spans)};
    auto [where, fresh] = index_.try_emplace(std::move(shape), shapes_.size());
    if (fresh) shapes_.emplace_back();
    std::deque<Access>& kept = shapes_[where->second];
    if (std::find(kept.begin(), kept.end(), access) != kept.end()) continue;
    if (kept.size() == kKeptPerShape) kept.pop_front();
    kept.push_back(std::move(access));
  }
  return found;
}

std::optional<std::string> Journal::check(const Access& fresh) const {
  for (const std::deque<Access>& kept : shapes_) {
    if (kept.empty() || kept.front().origin == fresh.origin || !overlap(kept.front().spans, fresh.spans)) continue;
    for (const Access& old : kept) {
      std::optional<std::string> why = conflict(old, fresh);
      if (why && !ordered(old, fresh) && !ordered(fresh, old)) return conflict_message(window_, old, fresh, *why);
    }
  }
  return std::nullopt;
}

}  // namespace rma::check
