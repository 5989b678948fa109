// A compiled call's record in the trace (RMA_TRACE, base/trace.hpp): made on the stack at the
// call's entrance, with the GIL held (the user's file and line are read then), and added to
// the rank's ring when it goes out of scope. Untraced, it is one predicted branch.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/trace.hpp"

class TracedCall {
 public:
  // name: the call's name (a string that lives as long as the process; null: not traced);
  // object_of(): the window's id or the communicator's context, asked only when tracing.
  template <class ObjectOf>
  TracedCall(const char* name, rma::trace::Kind kind, ObjectOf&& object_of) {
    if (rma::trace::on() && name != nullptr) [[unlikely]]
      begin(name, kind, object_of());
  }
  ~TracedCall() {
    if (active_) [[unlikely]]
      end();
  }
  TracedCall(const TracedCall&) = delete;
  TracedCall& operator=(const TracedCall&) = delete;

  // What the innermost traced call of this thread moves: its target (a job rank) and bytes.
  static void note(int target, uint64_t bytes) {
    if (rma::trace::on() && current_ != nullptr) [[unlikely]] {
      current_->record_.target = target;
      current_->record_.bytes = bytes;
    }
  }

  // The same for a communicator's call, whose peer is a rank of `members` not yet checked (a bad
  // one is the call's error to raise, after this): the job's rank, or -1 (none, or not a rank).
  static void note_peer(const std::vector<int>& members, int rank, uint64_t bytes) {
    if (rma::trace::on() && current_ != nullptr) [[unlikely]]
      note(rank >= 0 && static_cast<size_t>(rank) < members.size() ? members[rank] : -1, bytes);
  }

  // The object the innermost traced call made (a window's creation learns its id last).
  static void note_object(int64_t object) {
    if (rma::trace::on() && current_ != nullptr) [[unlikely]]
      current_->record_.object = object;
  }

 private:
  void begin(const char* name, rma::trace::Kind kind, int64_t object);
  void end();

  bool active_ = false;
  TracedCall* outer_ = nullptr;
  rma::trace::Record record_;  // (filled only when active_)
  static thread_local TracedCall* current_;
};

// A call's name made at run time, kept for the trace: interned only while tracing (an untraced
// call keeps nothing and pays one branch).
inline const char* traced_name(const std::string& name) {
  return rma::trace::on() ? rma::trace::intern(name) : nullptr;
}
