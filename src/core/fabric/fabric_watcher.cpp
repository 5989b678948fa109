#include "fabric/fabric_watcher.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>

#include "base/errors.hpp"

namespace rma {

FabricWatcher::FabricWatcher(int fd, Bell& bell, std::function<bool()> ready_to_sleep)
    : fd_(fd), stop_fd_(eventfd(0, EFD_CLOEXEC)), bell_(bell), ready_to_sleep_(std::move(ready_to_sleep)) {
  if (stop_fd_ < 0) throw RmaError("rma: eventfd for the fabric watcher failed");
  thread_ = std::thread([this] { run(); });
}

FabricWatcher::~FabricWatcher() {
  {
    std::lock_guard lock(mutex_);
    stopping_.store(true, std::memory_order_release);
  }
  armed_changed_.notify_one();
  uint64_t one = 1;
  if (write(stop_fd_, &one, sizeof one) < 0) {
    // (an eventfd write fails only on overflow: the poll ends anyway)
  }
  if (thread_.joinable()) thread_.join();
  close(stop_fd_);
}

void FabricWatcher::arm() {
  {
    std::lock_guard lock(mutex_);
    if (armed_) return;
    armed_ = true;
  }
  armed_changed_.notify_one();
}

void FabricWatcher::run() {
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      armed_changed_.wait(lock, [this] { return armed_ || stopping_.load(std::memory_order_acquire); });
      if (stopping_.load(std::memory_order_acquire)) return;
    }
    // Work already pending (a completion, data the provider has not progressed) rings at once;
    // else sleep until the fd says there may be some. Either way the engine wakes, and arms
    // the watcher again when it next dozes.
    if (ready_to_sleep_()) {
      pollfd fds[2] = {{fd_, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
      while (poll(fds, 2, -1) < 0 && errno == EINTR) {
      }
      if (stopping_.load(std::memory_order_acquire)) return;
    }
    {
      std::lock_guard lock(mutex_);
      armed_ = false;
    }
    bell_.ring();
  }
}

}  // namespace rma
