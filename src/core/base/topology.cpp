#include "base/topology.hpp"

#include <map>

#include "base/errors.hpp"

namespace rma {

Topology::Topology(const std::vector<std::string>& hosts, int me) : host_of_(hosts.size()) {
  if (me < 0 || me >= size()) {
    throw UsageError("rma: rank " + std::to_string(me) + " is not among the " + std::to_string(hosts.size()) +
                     " ranks whose hosts were given");
  }
  std::map<std::string, int> numbers;
  for (size_t rank = 0; rank < hosts.size(); ++rank) {
    auto [at, fresh] = numbers.try_emplace(hosts[rank], host_count_);
    if (fresh) ++host_count_;
    host_of_[rank] = at->second;
  }
  for (int rank = 0; rank < size(); ++rank) {
    if (host_of_[rank] == host_of_[me]) host_ranks_.push_back(rank);
  }
}

int Topology::host_of(int rank) const {
  if (rank < 0 || rank >= size()) {
    throw UsageError("rma: rank " + std::to_string(rank) + " is not in the job (size " + std::to_string(size()) + ")");
  }
  return host_of_[rank];
}

bool Topology::one_host(std::span<const int> ranks) const {
  for (int rank : ranks) {
    if (host_of(rank) != host_of(ranks.front())) return false;
  }
  return true;
}

}  // namespace rma
