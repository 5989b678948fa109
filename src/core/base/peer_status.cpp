#include "base/peer_status.hpp"

#include "base/errors.hpp"

namespace rma {

PeerStatus::PeerStatus(int size)
    : size_(size),
      dead_(new std::atomic<bool>[size]),
      unreachable_(new std::atomic<bool>[size]),
      misbehaviour_(new std::string[size]) {
  for (int i = 0; i < size; ++i) {
    dead_[i].store(false);
    unreachable_[i].store(false);
  }
}

void PeerStatus::mark_dead(int rank, bool unreachable) noexcept {
  // (The reason first: whoever sees the rank dead reads why.)
  if (rank == -1) {
    job_unreachable_.store(unreachable, std::memory_order_relaxed);
    job_lost_.store(true, std::memory_order_release);
  } else if (rank >= 0 && rank < size_) {
    unreachable_[rank].store(unreachable, std::memory_order_relaxed);
    dead_[rank].store(true, std::memory_order_release);
    int none = -1;
    first_dead_.compare_exchange_strong(none, rank, std::memory_order_acq_rel);
  }
  any_dead_.store(true, std::memory_order_release);
}

void PeerStatus::mark_misbehaving(int rank, const std::string& why) {
  if (rank < 0 || rank >= size_) return;
  {
    std::lock_guard lock(misbehaviour_mutex_);
    if (!misbehaviour_[rank].empty()) return;
    misbehaviour_[rank] = why.empty() ? std::string("a malformed message") : why;
  }
  mark_dead(rank);
}

bool PeerStatus::dead(int rank) const noexcept {
  if (job_lost_.load(std::memory_order_acquire)) return true;
  return rank >= 0 && rank < size_ && dead_[rank].load(std::memory_order_acquire);
}

void PeerStatus::check(std::span<const int> ranks, int my_rank, const std::string& during) const {
  if (!any_dead()) return;
  if (job_lost_.load(std::memory_order_acquire)) {
    const char* why = job_unreachable_.load(std::memory_order_relaxed)
                          ? "(the rendezvous store stopped answering for RMA_LINK_TIMEOUT: this host's link is "
                            "down, or the store's host is gone)"
                          : "(the launcher's rendezvous store is gone)";
    throw PeerError("rma: rank " + std::to_string(my_rank) + " lost contact with the job " + why + " during " +
                    without_rank_mention(during, my_rank));
  }
  for (int rank : ranks) {
    if (rank != my_rank && dead(rank)) {
      int first = first_dead_.load(std::memory_order_acquire);
      if (first < 0 || first == my_rank) first = rank;
      {
        // A rank this one stopped trusting is the cause itself, whoever died first.
        std::lock_guard lock(misbehaviour_mutex_);
        if (!misbehaviour_[rank].empty()) first = rank;
      }
      std::string what = unreachable_[first].load(std::memory_order_relaxed)
                             ? " became unreachable (its host stopped answering for RMA_LINK_TIMEOUT: its link is "
                               "down, or the host is gone)"
                             : " died (its process ended without rma.finalize())";
      {
        std::lock_guard lock(misbehaviour_mutex_);
        if (!misbehaviour_[first].empty()) {
          what = " is no longer trusted by rank " + std::to_string(my_rank) + ": it sent " + misbehaviour_[first];
        }
      }
      std::string text = "rma: rank " + std::to_string(first) + what + " while rank " + std::to_string(my_rank) +
                         " was in " + without_rank_mention(during, my_rank);
      if (first != rank) {
        text += "; rank " + std::to_string(rank) + ", which this call waits for, has " +
                (unreachable_[rank].load(std::memory_order_relaxed) ? "become unreachable" : "ended") + " since";
      }
      throw PeerError(text);
    }
  }
}

}  // namespace rma
