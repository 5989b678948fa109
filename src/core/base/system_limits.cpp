#include "base/system_limits.hpp"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <fstream>
#include <string>

namespace rma {

namespace {
constexpr uint64_t kGiB = uint64_t{1} << 30;

// A number from a one-line /proc or /sys file; nullopt if it cannot be read or is not one.
std::optional<uint64_t> read_number(const std::string& path) {
  std::ifstream in(path);
  uint64_t value = 0;
  if (in >> value) return value;
  return std::nullopt;
}

// The lines of a file, read without allocating: a failed mmap may mean that malloc cannot map
// either.
long count_lines(const char* path) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  long lines = 0;
  char buffer[4096];
  for (ssize_t got; (got = read(fd, buffer, sizeof buffer)) != 0;) {
    if (got < 0) {
      if (errno == EINTR) continue;
      close(fd);
      return -1;
    }
    for (ssize_t i = 0; i < got; ++i) lines += buffer[i] == '\n';
  }
  close(fd);
  return lines;
}

// The rlimit value as a number, 0 for RLIM_INFINITY.
uint64_t limit_value(rlim_t value) { return value == RLIM_INFINITY ? 0 : static_cast<uint64_t>(value); }

std::string gib_text(uint64_t bytes) { return std::to_string((bytes + kGiB - 1) / kGiB); }
}  // namespace

std::string bytes_text(uint64_t bytes) {
  if (bytes < 1024) return std::to_string(bytes) + " bytes";
  const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes) / 1024;
  int unit = 0;
  while (value >= 1024 && unit < 3) {
    value /= 1024;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof text, "%.1f %s", value, units[unit]);
  return text;
}

std::optional<ShmSpace> shm_space() {
  struct statvfs status;
  if (statvfs("/dev/shm", &status) != 0) return std::nullopt;
  return ShmSpace{.size = static_cast<uint64_t>(status.f_blocks) * status.f_frsize,
                  .free = static_cast<uint64_t>(status.f_bavail) * status.f_frsize};
}

std::string shm_space_text(uint64_t wanted, std::optional<ShmSpace> space) {
  std::string text = "/dev/shm";
  uint64_t needed = wanted;  // the least size that would have held it, all else kept
  if (space) {
    text += " holds " + bytes_text(space->size) + ", of which " + bytes_text(space->free) + " is free,";
    needed += space->size - std::min(space->free, space->size);
  } else {
    text += " (whose size could not be read) has no room for it,";
  }
  // Whole GiB, as people write them; at least 1.
  std::string size = gib_text(std::max(needed, kGiB));
  return text + " and this segment needs " + bytes_text(wanted) + ": give /dev/shm at least " + size +
         "G (as root: mount -o remount,size=" + size +
         "G /dev/shm; for a Docker container: docker run --shm-size=" + size + "g), or ask for less window memory";
}

std::optional<uint64_t> cgroup_memory_limit() {
  // cgroup v2: the line "0::<path>" of /proc/self/cgroup names this process's group.
  std::ifstream cgroups("/proc/self/cgroup");
  for (std::string line; std::getline(cgroups, line);) {
    if (line.rfind("0::", 0) == 0) return read_number("/sys/fs/cgroup" + line.substr(3) + "/memory.max");
  }
  return std::nullopt;  // (memory.max "max" does not read as a number: no limit)
}

std::string memory_text(uint64_t wanted, std::optional<uint64_t> cgroup_limit) {
  // Shared memory pages count toward the memory cgroup of the process that touches them first.
  if (cgroup_limit) {
    return "this process's memory cgroup allows " + bytes_text(*cgroup_limit) + " (memory.max) and has no room for " +
           bytes_text(wanted) +
           " more: raise its limit (for a Docker container: docker run --memory), or ask for less "
           "window memory";
  }
  return "the machine has no memory left for " + bytes_text(wanted) + " more: ask for less window memory";
}

MapCount map_count() {
  MapCount count;
  count.mappings = count_lines("/proc/self/maps");
  if (auto max = read_number("/proc/sys/vm/max_map_count")) count.max = static_cast<long>(*max);
  struct rlimit limit;
  if (getrlimit(RLIMIT_AS, &limit) == 0) count.address_limit = limit_value(limit.rlim_cur);
  return count;
}

std::string map_count_text(const MapCount& count) {
  // mmap says ENOMEM both for a process at vm.max_map_count and for one out of address space:
  // the count tells which (within a margin: other threads map and unmap meanwhile).
  constexpr long kMargin = 16;
  std::string max = count.max >= 0 ? std::to_string(count.max) : "(unknown)";
  std::string mappings = count.mappings >= 0 ? std::to_string(count.mappings) : "an unknown number of";
  if (count.max >= 0 && count.mappings >= 0 && count.mappings + kMargin >= count.max) {
    return "this process has " + mappings + " memory mappings and vm.max_map_count allows " + max +
           ": raise it (as root: sysctl vm.max_map_count=" + std::to_string(2 * count.max) +
           "), or free the windows no longer needed";
  }
  std::string text = "this process has " + mappings + " memory mappings (vm.max_map_count allows " + max + ")";
  if (count.address_limit != 0) {
    return text + " and its address space is limited to " + bytes_text(count.address_limit) +
           " (RLIMIT_AS): raise it (ulimit -v), or ask for less window memory";
  }
  return text + ": the machine has no memory left to map it";
}

OpenFiles open_files() {
  OpenFiles files;
  struct rlimit limit;
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0) {
    files.soft = limit_value(limit.rlim_cur);
    files.hard = limit_value(limit.rlim_max);
  }
  // (Unreadable when the system is out of files too: ENFILE.)
  if (auto max = read_number("/proc/sys/fs/file-max")) files.system_max = static_cast<long>(*max);
  return files;
}

std::string open_files_text(int error, const OpenFiles& files) {
  if (error == EMFILE) {
    // EMFILE: every descriptor below the soft limit is taken, so the count is the limit.
    std::string soft = files.soft != 0 ? std::to_string(files.soft) : "(unlimited)";
    std::string hard = files.hard != 0 ? std::to_string(files.hard) : "unlimited";
    std::string text =
        "this process has all the " + soft + " files open that RLIMIT_NOFILE allows (hard limit " + hard + "): ";
    if (files.soft != 0 && files.soft == files.hard) {
      return text +
             "raise both limits (as root: ulimit -Hn, or /etc/security/limits.conf), or free the windows no "
             "longer needed";
    }
    return text + "raise it before the job starts (ulimit -n " + hard +
           "; in Python, resource.setrlimit), or free the windows no longer needed";
  }
  if (error == ENFILE) {
    std::string max = files.system_max >= 0 ? std::to_string(files.system_max) : "its limit";
    return "the system has all the files open that fs.file-max allows (" + max +
           "): raise it (as root: sysctl fs.file-max=" +
           (files.system_max >= 0 ? std::to_string(2 * files.system_max) : "...") + ")";
  }
  return {};
}

}  // namespace rma
