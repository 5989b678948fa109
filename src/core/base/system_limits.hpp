// The system limits that making and mapping shared memory meets, named in errors with their
// values and how to raise them. Without this an error says only errno's words ("No space left
// on device", "Cannot allocate memory"), which do not tell a user that /dev/shm is 64 MiB in
// their container, or that a process may hold only vm.max_map_count mappings.
//
// Each text comes in two steps: the facts, read from the system (/dev/shm's statvfs,
// /proc/self/maps, /proc/sys/vm/max_map_count, RLIMIT_NOFILE...), and the sentence built from
// them, a pure function that the unit tests give facts of their own.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace rma {

// "64.0 MiB", "1.5 GiB", "512 bytes".
std::string bytes_text(uint64_t bytes);

// ---- /dev/shm and memory (a failed posix_fallocate) ----

struct ShmSpace {
  uint64_t size = 0;  // the file system's size
  uint64_t free = 0;  // what is left of it
};
// /dev/shm's size and free space (statvfs); nullopt if it cannot be read.
std::optional<ShmSpace> shm_space();
// Why `wanted` more bytes of /dev/shm cannot be had (ENOSPC): its size, what is free, and how to
// give it more (mount -o remount, docker run --shm-size).
std::string shm_space_text(uint64_t wanted, std::optional<ShmSpace> space);
// The memory limit of this process's cgroup (memory.max, cgroup v2), if it has one.
std::optional<uint64_t> cgroup_memory_limit();
// Why memory cannot be had (ENOMEM from posix_fallocate): the machine's or the cgroup's.
std::string memory_text(uint64_t wanted, std::optional<uint64_t> cgroup_limit);

// ---- mappings (a failed mmap) ----

struct MapCount {
  long mappings = -1;        // lines of /proc/self/maps; -1 unknown
  long max = -1;             // /proc/sys/vm/max_map_count; -1 unknown
  uint64_t address_limit{};  // RLIMIT_AS; 0 when unlimited
};
MapCount map_count();
// Why a mapping cannot be made (ENOMEM from mmap): how many this process has and
// vm.max_map_count allows, and how to raise it; or its address space limit.
std::string map_count_text(const MapCount& count);

// ---- open files (a failed shm_open or open) ----

struct OpenFiles {
  long open = -1;     // entries of /proc/self/fd; -1 unknown
  uint64_t soft = 0;  // RLIMIT_NOFILE; 0 when unlimited
  uint64_t hard = 0;
  long system_max = -1;  // /proc/sys/fs/file-max; -1 unknown
};
OpenFiles open_files();
// Why no file can be opened: EMFILE (this process's RLIMIT_NOFILE) or ENFILE (the system's
// fs.file-max), and how to raise it; "" for any other error.
std::string open_files_text(int error, const OpenFiles& files);

}  // namespace rma
