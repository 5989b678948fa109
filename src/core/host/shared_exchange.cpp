#include "host/shared_exchange.hpp"

#include <algorithm>
#include <cstring>

namespace rma {

std::vector<SharedExchange::Contribution> SharedExchange::exchange(std::span<const std::byte> mine,
                                                                   const std::function<void()>& pass,
                                                                   std::span<const std::byte> note) {
  // The round this rank arrives for; it cannot pass before this rank arrives, so every member
  // computes the same parity.
  size_t parity = barrier_.upcoming() % 2;
  std::byte* cell = cells_[rank_] + parity * BarrierBoard::kCellBytes;
  uint64_t size = mine.size();
  std::memcpy(cell, &size, sizeof size);
  // (An empty span's data() may be null, which memcpy must not be given even for 0 bytes.)
  std::span<const std::byte> written = size <= kFits ? mine : note.first(std::min(note.size(), kFits));
  if (!written.empty()) std::memcpy(cell + sizeof size, written.data(), written.size());
  // (The barrier's atomics order these writes before the others' reads.)
  pass();
  std::vector<Contribution> all(cells_.size());
  for (size_t rank = 0; rank < cells_.size(); ++rank) {
    const std::byte* theirs = cells_[rank] + parity * BarrierBoard::kCellBytes;
    std::memcpy(&all[rank].size, theirs, sizeof(uint64_t));
    bool fits = all[rank].size <= kFits;
    all[rank].data = fits ? theirs + sizeof(uint64_t) : nullptr;
    all[rank].note = fits ? nullptr : theirs + sizeof(uint64_t);
  }
  return all;
}

bool SharedExchange::all_fit(const std::vector<Contribution>& all) {
  return std::all_of(all.begin(), all.end(), [](const Contribution& each) { return each.data != nullptr; });
}

}  // namespace rma
