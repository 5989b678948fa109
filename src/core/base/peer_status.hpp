// Which ranks of the job are known to be dead. The bootstrap layer learns of deaths (the
// rendezvous store sees a rank's connection close without a goodbye) and marks them here;
// every blocking wait checks the ranks it depends on, so a death becomes PeerError, not a hang.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <span>
#include <string>

namespace rma {

class PeerStatus {
 public:
  explicit PeerStatus(int size);
  // rank == -1 means contact with the whole job was lost (the launcher is gone). unreachable:
  // not known to have ended, but silent (its host, or this one, stopped answering the
  // rendezvous store: a link down, a host gone), which the errors say instead.
  void mark_dead(int rank, bool unreachable = false) noexcept;
  // rank sent this rank a message that breaks the wire's rules (a length, offset, id or
  // sequence number that cannot be right; message_router.hpp): nothing more it sends can be
  // trusted, so it counts as dead here, and the errors say why. The first reason stays.
  void mark_misbehaving(int rank, const std::string& why);
  bool dead(int rank) const noexcept;
  bool any_dead() const noexcept { return any_dead_.load(std::memory_order_acquire); }
  // Throws PeerError if one of `ranks` (world ranks) is dead; `during` names the waiting call.
  // The error names the first rank of the job that died (which ranks that ended after their own
  // PeerError may be waiting on), and the one of `ranks` too when it is another.
  void check(std::span<const int> ranks, int my_rank, const std::string& during) const;
  void check(int rank, int my_rank, const std::string& during) const {
    check(std::span<const int>(&rank, 1), my_rank, during);
  }

 private:
  int size_;
  std::unique_ptr<std::atomic<bool>[]> dead_;
  std::unique_ptr<std::atomic<bool>[]> unreachable_;
  std::unique_ptr<std::string[]> misbehaviour_;  // why, set before dead_ (read after it)
  mutable std::mutex misbehaviour_mutex_;
  std::atomic<bool> any_dead_{false};
  std::atomic<bool> job_lost_{false};
  std::atomic<bool> job_unreachable_{false};
  // The first rank announced dead. Ranks that got a PeerError often end without finalizing
  // too, and are then announced dead after it: an error names the first, the likely cause.
  std::atomic<int> first_dead_{-1};
};

}  // namespace rma
