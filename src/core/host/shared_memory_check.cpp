#include "host/shared_memory_check.hpp"

#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <exception>

#include "host/shared_segment.hpp"

namespace rma {

std::string shared_segment_problem() {
  try {
    SharedSegment::create_owned(4096, "check");  // (its destructor unlinks and unmaps it)
    return "";
  } catch (const std::exception& error) {
    return error.what();
  }
}

std::string peer_read_problem() {
  // The parent is no descendant of the child, as one rank is none of another: a kernel that
  // lets only ancestors read (yama's ptrace_scope 1) refuses the child as it would a peer.
  static volatile unsigned char target = 1;
  pid_t child = fork();
  if (child < 0) return std::string("fork: ") + std::strerror(errno);
  if (child == 0) {
    // Only async-signal-safe calls here: the parent may have had other threads.
    unsigned char got = 0;
    iovec here{&got, 1};
    iovec there{const_cast<unsigned char*>(&target), 1};
    ssize_t moved = process_vm_readv(getppid(), &here, 1, &there, 1, 0);
    _exit(moved == 1 ? 0 : (errno > 0 && errno < 256 ? errno : 255));
  }
  int status = 0;
  while (waitpid(child, &status, 0) < 0) {
    if (errno != EINTR) return std::string("waitpid: ") + std::strerror(errno);
  }
  if (!WIFEXITED(status)) return "the process that tried process_vm_readv ended without an exit status";
  int error = WEXITSTATUS(status);
  if (error == 0) return "";
  std::string text = std::string("process_vm_readv: ") + std::strerror(error);
  if (error == EPERM || error == EACCES) {
    text +=
        " (the kernel's ptrace rules forbid it: kernel.yama.ptrace_scope above 0, a process that is not "
        "dumpable, or a seccomp filter such as a container's)";
  } else if (error == ENOSYS) {
    text += " (a seccomp filter, such as a container's, blocks the call)";
  }
  return text;
}

}  // namespace rma
