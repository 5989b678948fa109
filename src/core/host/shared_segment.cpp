#include "host/shared_segment.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>

#include "base/errors.hpp"
#include "base/interrupts.hpp"
#include "base/system_limits.hpp"

namespace rma {

namespace {
// errno's words for a failed shm_open, and the limit on open files it met, if that was it.
std::string open_failure(int error) {
  std::string limit = open_files_text(error, open_files());
  return std::string(std::strerror(error)) + (limit.empty() ? "" : "; " + limit);
}

void* map(int fd, size_t bytes, const std::string& name) {
  if (bytes == 0) return nullptr;
  void* data = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (data == MAP_FAILED) {
    int error = errno;
    std::string text =
        "rma: cannot map shared memory " + name + " (" + bytes_text(bytes) + "): " + std::strerror(error);
    if (error == ENOMEM) throw OutOfMemoryError(text + "; " + map_count_text(map_count()));
    throw RmaError(text);
  }
  return data;
}

// Takes the segment's memory now. ftruncate alone makes a sparse file whose pages come at the
// first store into them: a segment larger than what /dev/shm (or a memory cgroup) has left
// would then be made without complaint, and its first store past the end of that room would
// kill the process with SIGBUS. posix_fallocate takes every page now, zero-filled, or fails.
void reserve(int fd, size_t bytes, const std::string& name) {
  // In steps: a signal interrupts a large fallocate (EINTR), and the kernel then gives back all
  // that call took, so a whole one retried might never end under frequent signals (a
  // profiler's); a step lost costs only itself. A SIGINT ends it, as it ends the core's waits.
  constexpr size_t kStep = size_t{256} << 20;
  unsigned long interrupts_before = interrupt_count();
  for (size_t at = 0; at < bytes;) {
    size_t step = std::min(kStep, bytes - at);
    int error = posix_fallocate(fd, static_cast<off_t>(at), static_cast<off_t>(step));  // (errno left alone)
    if (error == EINTR) {
      if (interrupt_count() != interrupts_before) {
        throw Interrupted("rma: reserving " + bytes_text(bytes) + " of shared memory for " + name + " was interrupted");
      }
      continue;
    }
    if (error != 0) {
      std::string text =
          "rma: cannot reserve " + bytes_text(bytes) + " of shared memory for " + name + ": " + std::strerror(error);
      if (error == ENOSPC) throw OutOfMemoryError(text + "; " + shm_space_text(bytes, shm_space()));
      if (error == ENOMEM) throw OutOfMemoryError(text + "; " + memory_text(bytes, cgroup_memory_limit()));
      throw RmaError(text);
    }
    at += step;
  }
}
}  // namespace

std::shared_ptr<SharedSegment> SharedSegment::create(size_t bytes, const std::string& purpose) {
  return create_owned(bytes, purpose);
}

std::unique_ptr<SharedSegment> SharedSegment::create_owned(size_t bytes, const std::string& purpose) {
  static std::atomic<unsigned> counter{0};
  std::string pid = std::to_string(getpid()), n = std::to_string(counter++);
  std::string name = purpose.empty() ? "/rma-" + pid + "-" + n : "/" + pid + "-rma-" + purpose + "-" + n;
  int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0 && errno == EEXIST) {
    // The name carries our process id, so no live process made it: a killed one with the same
    // id left it (a rank killed while creating a window keeps its names). Take it over.
    shm_unlink(name.c_str());
    fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  }
  if (fd < 0) {
    int error = errno;
    throw RmaError("rma: cannot create shared memory " + name + ": " + open_failure(error));
  }
  void* data;
  try {
    reserve(fd, bytes, name);
    data = map(fd, bytes, name);
  } catch (...) {
    close(fd);
    shm_unlink(name.c_str());
    throw;
  }
  close(fd);
  return std::unique_ptr<SharedSegment>(new SharedSegment(name, data, bytes, true, !purpose.empty()));
}

std::shared_ptr<SharedSegment> SharedSegment::open(const std::string& name, size_t bytes) {
  int fd = shm_open(name.c_str(), O_RDWR, 0600);
  if (fd < 0) {
    int error = errno;
    throw RmaError("rma: cannot open a peer's shared memory " + name + ": " + open_failure(error));
  }
  void* data;
  try {
    data = map(fd, bytes, name);
  } catch (...) {
    close(fd);
    throw;
  }
  close(fd);
  return std::shared_ptr<SharedSegment>(new SharedSegment(name, data, bytes, false, false));
}

void SharedSegment::unlink() noexcept {
  if (owner_ && !unlinked_) shm_unlink(name_.c_str());
  unlinked_ = true;
}

SharedSegment::~SharedSegment() {
  unlink();
  if (data_ != nullptr) munmap(data_, bytes_);
}

}  // namespace rma
