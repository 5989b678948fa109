// A POSIX shared-memory segment that every rank of a host maps: window memory (a put is a
// memcpy into the target's memory, an accumulate a CPU atomic on it), a window's control
// block, a rank's bell.
//
// A window's segment names exist only while the window is being created: once every rank has
// mapped every segment, each rank unlinks its own, so a killed job leaves nothing in /dev/shm.
// Names that must live longer (a rank's bell, the control blocks a ControlPool keeps, the data
// segments a SegmentPool keeps) start with the owner's pid, which is how the launcher and
// rma.init find and remove those of killed processes.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <string>

namespace rma {

class SharedSegment {
 public:
  // Creates, reserves (every page taken now, zero-filled) and maps a new segment with a fresh
  // unique name ("/rma-<pid>-<n>", or "/<pid>-rma-<purpose>-<n>" for a long-lived one).
  // OutOfMemoryError when /dev/shm or memory has no room for it, or no mapping can be made;
  // RmaError naming RLIMIT_NOFILE when no file can be opened. Nothing is left behind then.
  static std::shared_ptr<SharedSegment> create(size_t bytes, const std::string& purpose = "");
  static std::unique_ptr<SharedSegment> create_owned(size_t bytes, const std::string& purpose = "");
  // Maps a segment another rank of this host created (errors as create's).
  static std::shared_ptr<SharedSegment> open(const std::string& name, size_t bytes);
  ~SharedSegment();
  SharedSegment(const SharedSegment&) = delete;
  SharedSegment& operator=(const SharedSegment&) = delete;

  const std::string& name() const noexcept { return name_; }
  std::byte* data() noexcept { return data_ != nullptr ? static_cast<std::byte*>(data_) : &empty_; }
  size_t bytes() const noexcept { return bytes_; }
  // Removes the name (the mappings stay valid). Idempotent; never throws.
  void unlink() noexcept;
  // The name outlives the window that maps it (made with a purpose): only the owner's
  // destruction removes it.
  bool lasting() const noexcept { return lasting_; }
  // The window of this memory was freed on every rank, so nobody addresses it any more: once
  // its last user here lets it go, it may serve another window (SegmentPool).
  void mark_reusable() noexcept { reusable_ = true; }
  bool reusable() const noexcept { return reusable_; }

 private:
  SharedSegment(std::string name, void* data, size_t bytes, bool owner, bool lasting)
      : name_(std::move(name)), data_(data), bytes_(bytes), owner_(owner), lasting_(lasting) {}
  std::string name_;
  void* data_;
  size_t bytes_;
  bool owner_;
  bool lasting_;
  bool unlinked_ = false;
  std::atomic<bool> reusable_ = false;
  std::byte empty_{};  // a valid address for a 0-byte segment
};

}  // namespace rma
