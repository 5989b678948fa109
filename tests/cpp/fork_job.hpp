// Runs a body in `size` forked processes that can exchange bytes through the parent (an
// allgather: what a launcher's rendezvous store does), for tests and benchmarks of the core.
#pragma once

#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <thread>
#include <vector>

namespace fork_job {

using Bytes = std::vector<std::byte>;
// Gives every rank's bytes, in rank order, for this rank's bytes. Call it once.
using Exchange = std::function<std::vector<Bytes>(const Bytes&)>;

inline void write_all(int fd, const void* data, size_t length) {
  auto p = static_cast<const char*>(data);
  while (length > 0) {
    ssize_t n = ::write(fd, p, length);
    if (n <= 0) std::_Exit(90);
    p += n;
    length -= static_cast<size_t>(n);
  }
}

inline void read_all(int fd, void* data, size_t length) {
  auto p = static_cast<char*>(data);
  while (length > 0) {
    ssize_t n = ::read(fd, p, length);
    if (n <= 0) std::_Exit(91);
    p += n;
    length -= static_cast<size_t>(n);
  }
}

inline void send_bytes(int fd, const Bytes& bytes) {
  uint64_t length = bytes.size();
  write_all(fd, &length, sizeof length);
  write_all(fd, bytes.data(), bytes.size());
}

inline Bytes receive_bytes(int fd) {
  uint64_t length;
  read_all(fd, &length, sizeof length);
  Bytes bytes(length);
  read_all(fd, bytes.data(), length);
  return bytes;
}

// Forks the ranks; each runs body(rank, exchange) and exits with its return value. Returns the
// ranks' wait statuses (a rank still running after timeout_seconds is killed).
inline std::vector<int> run(int size, const std::function<int(int, const Exchange&)>& body, int timeout_seconds = 90) {
  std::vector<int> ends;
  std::vector<pid_t> pids;
  for (int rank = 0; rank < size; ++rank) {
    int pair[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, pair) != 0) std::abort();
    pid_t pid = fork();
    if (pid == 0) {
      ::close(pair[0]);
      Exchange exchange = [fd = pair[1], size](const Bytes& mine) {
        send_bytes(fd, mine);
        std::vector<Bytes> all(size);
        for (auto& item : all) item = receive_bytes(fd);
        return all;
      };
      int status = 1;
      try {
        status = body(rank, exchange);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "rank %d: %s\n", rank, e.what());
      }
      std::fflush(nullptr);
      std::_Exit(status);
    }
    ::close(pair[1]);
    ends.push_back(pair[0]);
    pids.push_back(pid);
  }
  // One exchange: collect every rank's bytes, hand everyone all of them.
  std::vector<Bytes> all(size);
  for (int rank = 0; rank < size; ++rank) all[rank] = receive_bytes(ends[rank]);
  for (int rank = 0; rank < size; ++rank) {
    for (const Bytes& item : all) send_bytes(ends[rank], item);
  }
  std::vector<int> statuses(size, -1);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_seconds);
  for (int rank = 0; rank < size; ++rank) {
    while (waitpid(pids[rank], &statuses[rank], WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        std::fprintf(stderr, "rank %d hung; killing it\n", rank);
        kill(pids[rank], SIGKILL);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    ::close(ends[rank]);
  }
  return statuses;
}

}  // namespace fork_job
