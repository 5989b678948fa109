// Which ranks of the job share a host, learned once when the job connects: every rank
// publishes a host identity (the bootstrap uses the hostname) and ranks with equal identities
// share a host, so they can reach each other through shared memory. Fixed for the job's life.
#pragma once

#include <span>
#include <string>
#include <vector>

namespace rma {

class Topology {
 public:
  // No ranks: what a runtime knows before it connects.
  Topology() = default;
  // hosts[r] is rank r's host identity; me is this rank. Throws UsageError when me is not a
  // rank of hosts.
  Topology(const std::vector<std::string>& hosts, int me);

  int size() const noexcept { return static_cast<int>(host_of_.size()); }
  // Hosts are numbered from 0 in the order of their lowest rank (rank 0's host is 0).
  // Throws UsageError for a rank outside [0, size()).
  int host_of(int rank) const;
  bool same_host(int a, int b) const { return host_of(a) == host_of(b); }
  int host_count() const noexcept { return host_count_; }
  // The ranks on this rank's host, ascending (this rank among them).
  const std::vector<int>& host_ranks() const noexcept { return host_ranks_; }
  // Whether all of `ranks` share one host (true for none). Throws UsageError like host_of.
  bool one_host(std::span<const int> ranks) const;

 private:
  std::vector<int> host_of_;
  std::vector<int> host_ranks_;
  int host_count_ = 0;
};

}  // namespace rma
