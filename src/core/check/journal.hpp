// What a target rank learnt of the accesses to its memory, checked as each one arrives.
//
// Origins send their accesses to the target once a flush, unlock, complete or fence completed
// them there. The journal compares each arrival with what it holds from the other origins (an
// origin's own accesses were compared at the origin, when it made them) and returns the first
// pair that conflicts and that nothing orders. It forgets everything at a fence or free: every
// access made before one happened before every access made after it.
#pragma once

#include <deque>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "check/access.hpp"

namespace rma::check {

class Journal {
 public:
  // How many accesses it keeps per origin, call site, kind and bytes (the oldest go first): a
  // loop of locked updates would otherwise make the journal grow without end. An older access
  // of the same shape from the same origin is ordered before the newer ones, so a conflict with
  // it is, in every case we have met, a conflict with a newer one too.
  static constexpr size_t kKeptPerShape = 16;

  // window: names the window in messages.
  explicit Journal(std::string window) : window_(std::move(window)) {}

  // Takes in accesses to this rank; returns the message of the first conflict.
  std::optional<std::string> add(std::vector<Access> accesses);
  void clear() {
    shapes_.clear();
    index_.clear();
  }

 private:
  using Shape = std::tuple<int32_t, std::string, AccessKind, std::string, std::string, std::vector<uint64_t>>;
  std::optional<std::string> check(const Access& access) const;

  std::string window_;
  std::vector<std::deque<Access>> shapes_;  // in the order their first access came (as reported)
  std::map<Shape, size_t> index_;
};

}  // namespace rma::check
