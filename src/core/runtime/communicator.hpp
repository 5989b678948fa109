// A communicator: an ordered set of ranks (members) with a context of its own, so messages of
// different communicators never match. Payloads are bytes; the Python layer pickles objects.
// Every blocking call makes progress while it waits, raises PeerError if a member dies and
// TimeoutError at the runtime's deadline.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace rma {

class Runtime;

using Bytes = std::vector<std::byte>;
// The user's call a collective serves ("Window.allocate", "win.fence on rank 0 of window 3"),
// for its errors; built only when one is raised. Empty: the collective's own name ("comm.gather").
using CallName = std::function<std::string()>;

class Communicator {
 public:
  // Largest user tag; tags below 0 belong to the collectives.
  static constexpr int32_t kMaxTag = (1 << 30) - 1;

  // The runtime must be connected (its topology known). members: world ranks; rank: this
  // rank's index in members.
  Communicator(std::shared_ptr<Runtime> runtime, uint32_t context, std::vector<int> members, int rank);

  int rank() const noexcept { return rank_; }
  int size() const noexcept { return static_cast<int>(members_.size()); }
  uint32_t context() const noexcept { return context_; }
  // World rank of each member, indexed by rank in this communicator.
  const std::vector<int>& members() const noexcept { return members_; }
  Runtime& runtime() const noexcept { return *runtime_; }
  // Whether every member runs on one host (so shared memory reaches them all).
  bool on_one_host() const noexcept { return on_one_host_; }
  // The ranks (in this communicator) of the members on this rank's host, ascending; this
  // rank among them.
  const std::vector<int>& host_ranks() const noexcept { return host_ranks_; }

  // Returns once the message is on its way (it does not wait for the matching recv).
  void send(std::span<const std::byte> data, int dest, int tag);
  // The oldest message from source with tag, waiting for it if needed.
  Bytes recv(int source, int tag);

  // The collectives; `call` names the call they serve in their errors.
  void barrier(const CallName& call = {});
  Bytes bcast(Bytes data, int root, const CallName& call = {});
  // Root receives everyone's data in rank order; the others get an empty vector.
  std::vector<Bytes> gather(std::span<const std::byte> data, int root, const CallName& call = {});
  std::vector<Bytes> allgather(std::span<const std::byte> data, const CallName& call = {});
  // Members with the same color form a new communicator, ordered by (key, rank); a negative
  // color takes part but gets no communicator (nullptr). Collective.
  std::shared_ptr<Communicator> split(int color, int key, const CallName& call = {});

 private:
  void check_rank(int rank, const char* call, const char* role) const;
  void post(int dest, int32_t tag, std::span<const std::byte> data);
  // own: the communicator call waiting ("recv"), named in errors unless `call` names another.
  Bytes wait_for(int source, int32_t tag, const char* own, const CallName& call = {});
  std::vector<int> watched() const { return members_; }

  std::shared_ptr<Runtime> runtime_;
  uint32_t context_;
  std::vector<int> members_;
  int rank_;
  bool on_one_host_;
  std::vector<int> host_ranks_;
};

}  // namespace rma
