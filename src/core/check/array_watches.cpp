#include "check/array_watches.hpp"

#include <algorithm>

namespace rma::check {

namespace {

std::string changed_message(const ArrayWatch& watch) {
  const Access& access = *watch.access;
  return watch.result
             ? "rma: RMA_CHECK: the result array of " + describe(access) +
                   " changed before the call completed at rank " + std::to_string(access.origin_rank) +
                   ": the library may fill it until the flush, flush_local, unlock, fence, complete or request wait "
                   "that completes the call; read or change it only after that call"
             : "rma: RMA_CHECK: the origin array of " + describe(access) +
                   " changed before the call completed at rank " + std::to_string(access.origin_rank) +
                   ": the library may read it until the flush, flush_local, unlock, fence, complete or request wait "
                   "that completes the call; change it after that call (or pass a copy)";
}

}  // namespace

std::optional<std::string> ArrayWatches::add(ArrayWatch watch) {
  std::optional<std::string> conflict;
  holder_.memory(watch.slot, bytes_);
  watch.memory = memory_.add(bytes_, *watch.access, watch.result, conflict);  // (the watch keeps the access)
  watches_.push_back(std::move(watch));
  return conflict;
}

template <class Done>
std::optional<std::string> ArrayWatches::finish(Done&& done) {
  finishing_.clear();
  size_t kept = 0;
  for (ArrayWatch& watch : watches_) {
    if (done(watch)) {
      finishing_.push_back(std::move(watch));
    } else {
      watches_[kept++] = std::move(watch);
    }
  }
  watches_.resize(kept);
  if (finishing_.empty()) return std::nullopt;
  // (Out of finishing_ while the holder runs: a digest may run the holder's code, which may
  // come back here.) Its slots are released however the comparison ends.
  std::vector<ArrayWatch> entries = std::move(finishing_);
  finishing_ = {};
  struct Release {
    ArrayHolder& holder;
    std::vector<ArrayWatch>& entries;
    ~Release() {
      for (const ArrayWatch& watch : entries) holder.release(watch.slot);
    }
  };
  std::optional<std::string> found;
  {
    Release release{holder_, entries};
    // No longer pending (a change the program was told of at its line is not told again).
    for (ArrayWatch& watch : entries) watch.told = memory_.remove(watch.memory);
    // Every digest before any copy: two calls that fill one array (an error too) must not make
    // each other's change.
    for (const ArrayWatch& watch : entries) {
      if (!found && !watch.told && holder_.digest(watch.slot) != watch.digest) found = changed_message(watch);
    }
    for (const ArrayWatch& watch : entries) {
      if (watch.result) holder_.deliver(watch.slot);
    }
  }
  entries.clear();
  finishing_ = std::move(entries);
  return found;
}

std::optional<std::string> ArrayWatches::finish_targets(std::span<const int> targets) {
  return finish([&](const ArrayWatch& watch) {
    return std::find(targets.begin(), targets.end(), watch.target) != targets.end();
  });
}

std::optional<std::string> ArrayWatches::finish_all() {
  return finish([](const ArrayWatch&) { return true; });
}

std::optional<std::string> ArrayWatches::finish_request(int target, uint64_t serial) {
  return finish([&](const ArrayWatch& watch) { return watch.target == target && watch.serial == serial; });
}

}  // namespace rma::check
