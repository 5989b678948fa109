#include "runtime/shared_segment.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "errors.hpp"

namespace rma {

namespace {
void* map(int fd, size_t bytes, const std::string& name) {
  if (bytes == 0) return nullptr;
  void* data = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (data == MAP_FAILED) {
    throw RmaError("rma: cannot map shared memory " + name + " (" + std::to_string(bytes) +
                   " bytes): " + std::strerror(errno));
  }
  return data;
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
    throw RmaError("rma: cannot create shared memory " + name + ": " + std::strerror(errno));
  }
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    int error = errno;
    close(fd);
    shm_unlink(name.c_str());
    throw RmaError("rma: cannot size shared memory to " + std::to_string(bytes) +
                   " bytes (is /dev/shm large enough?): " + std::strerror(error));
  }
  void* data;
  try {
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
    throw RmaError("rma: cannot open a peer's shared memory " + name + ": " + std::strerror(errno));
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
