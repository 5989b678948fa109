// The Python buffers a window's calls use until they complete, per target rank: origins the
// core reads later (messages, native writes), results it fills later, and the copies from a
// contiguous stand-in into a non-contiguous result. The window's synchronization calls finish
// them: fence, complete, unlock_all and flush_all every target; unlock, flush and a
// request's completion their target. A call refused before anything moved keeps nothing.
// Touched only with the GIL held.
#pragma once

#include <pybind11/pybind11.h>

#include <utility>
#include <vector>

class KeepAlive {
 public:
  explicit KeepAlive(int targets) : by_target_(static_cast<size_t>(targets)) {}

  void hold(int target, pybind11::object array) { by_target_[target].arrays.push_back(std::move(array)); }
  // At target's completion, copy stand_in into result (both held until then).
  void copy_back(int target, pybind11::object result, pybind11::object stand_in) {
    by_target_[target].copies.emplace_back(std::move(result), std::move(stand_in));
  }
  bool any(int target) const { return !by_target_[target].empty(); }
  bool any() const {
    for (const auto& held : by_target_) {
      if (!held.empty()) return true;
    }
    return false;
  }
  size_t count() const {
    size_t total = 0;
    for (const auto& held : by_target_) total += held.arrays.size() + held.copies.size();
    return total;
  }
  // The calls to target have completed: copy the stand-ins back and let go. Throws
  // py::error_already_set if a copy fails (it cannot, for arrays checked at the call).
  void finish(int target);
  void finish_all() {
    for (size_t target = 0; target < by_target_.size(); ++target) finish(static_cast<int>(target));
  }
  // Let go without copying (the window is freed, or the calls were abandoned).
  void drop_all() {
    for (auto& held : by_target_) held = Held{};
  }

 private:
  struct Held {
    std::vector<pybind11::object> arrays;
    std::vector<std::pair<pybind11::object, pybind11::object>> copies;  // (result, stand-in)
    bool empty() const { return arrays.empty() && copies.empty(); }
  };
  std::vector<Held> by_target_;
};
