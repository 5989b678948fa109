// The limits that making and mapping shared memory meets are named in the errors, with their
// values and how to raise them: the texts from given facts, then the errors SharedSegment
// raises when this process meets its open-files limit and its map-count limit for real.
#include "base/system_limits.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "base/errors.hpp"
#include "check.hpp"
#include "host/shared_segment.hpp"

namespace {
constexpr uint64_t kMiB = uint64_t{1} << 20, kGiB = uint64_t{1} << 30;

bool has(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return true;
  std::fprintf(stderr, "no \"%s\" in: %s\n", part.c_str(), text.c_str());
  return false;
}
}  // namespace

int main() {
  test::run("sizes read as people write them", [] {
    CHECK(rma::bytes_text(512) == "512 bytes");
    CHECK(rma::bytes_text(64 * kMiB) == "64.0 MiB");
    CHECK(rma::bytes_text(3 * kGiB / 2) == "1.5 GiB");
  });

  test::run("a full /dev/shm: its size, what is free, and a size that would hold the segment", [] {
    std::string text = rma::shm_space_text(50 * kMiB, rma::ShmSpace{.size = 64 * kMiB, .free = 4 * kMiB});
    CHECK(has(text, "/dev/shm holds 64.0 MiB, of which 4.0 MiB is free, and this segment needs 50.0 MiB"));
    CHECK(has(text, "mount -o remount,size=1G /dev/shm"));
    CHECK(has(text, "docker run --shm-size=1g"));
    // 1 GiB in use and 3 GiB more: 4 GiB.
    text = rma::shm_space_text(3 * kGiB, rma::ShmSpace{.size = 2 * kGiB, .free = kGiB});
    CHECK(has(text, "size=4G /dev/shm"));
    CHECK(has(rma::shm_space_text(kMiB, std::nullopt), "/dev/shm (whose size could not be read)"));
  });

  test::run("no memory: the cgroup's limit when there is one", [] {
    CHECK(has(rma::memory_text(50 * kMiB, 512 * kMiB), "memory cgroup allows 512.0 MiB (memory.max)"));
    CHECK(has(rma::memory_text(50 * kMiB, 512 * kMiB), "docker run --memory"));
    CHECK(has(rma::memory_text(50 * kMiB, std::nullopt), "the machine has no memory left for 50.0 MiB more"));
  });

  test::run("no mapping: vm.max_map_count when the count is at it, else the address space", [] {
    std::string text = rma::map_count_text({.mappings = 65530, .max = 65530});
    CHECK(has(text, "this process has 65530 memory mappings and vm.max_map_count allows 65530"));
    CHECK(has(text, "sysctl vm.max_map_count=131060"));
    text = rma::map_count_text({.mappings = 1000, .max = 65530, .address_limit = kGiB});
    CHECK(has(text, "1000 memory mappings (vm.max_map_count allows 65530)"));
    CHECK(has(text, "limited to 1.0 GiB (RLIMIT_AS): raise it (ulimit -v)"));
    CHECK(has(rma::map_count_text({.mappings = 1000, .max = 65530}), "the machine has no memory left to map it"));
    rma::MapCount now = rma::map_count();
    CHECK(now.mappings > 0 && now.max > 0);
  });

  test::run("no file: RLIMIT_NOFILE or fs.file-max", [] {
    std::string text = rma::open_files_text(EMFILE, {.soft = 1024, .hard = 4096});
    CHECK(has(text, "all the 1024 files open that RLIMIT_NOFILE allows (hard limit 4096)"));
    CHECK(has(text, "ulimit -n 4096"));
    CHECK(has(rma::open_files_text(EMFILE, {.soft = 4096, .hard = 4096}), "raise both limits"));
    CHECK(has(rma::open_files_text(ENFILE, {.system_max = 1000}), "sysctl fs.file-max=2000"));
    CHECK(rma::open_files_text(EACCES, {}).empty());
  });

  test::run("a process out of file descriptors cannot make a segment, and is told its limit", [] {
    struct rlimit saved;
    getrlimit(RLIMIT_NOFILE, &saved);
    // Take every descriptor below a lowered limit, then ask for a segment.
    struct rlimit lowered = saved;
    lowered.rlim_cur = 64;
    CHECK(setrlimit(RLIMIT_NOFILE, &lowered) == 0);
    std::vector<int> held;
    for (int fd; (fd = open("/dev/null", O_RDONLY)) >= 0;) held.push_back(fd);
    std::exception_ptr error;
    try {
      rma::SharedSegment::create(4096);
    } catch (...) {
      error = std::current_exception();
    }
    // Looked at once descriptors are free again: UndefinedBehaviorSanitizer checks the
    // exception's type through a pipe of its own, and without one calls it invalid.
    for (int fd : held) close(fd);
    setrlimit(RLIMIT_NOFILE, &saved);
    CHECK_THROWS(rma::RmaError, "files open that RLIMIT_NOFILE allows", if (error) std::rethrow_exception(error));
  });

  test::run("a process at vm.max_map_count cannot map a segment, and is told the limit", [] {
    rma::MapCount before = rma::map_count();
    // Each page of a region made readable splits it: two mappings more. (PROT_NONE: address
    // space only.)
    size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    size_t pages = static_cast<size_t>(before.max - before.mappings) + 2;
    auto* region = static_cast<char*>(mmap(nullptr, pages * page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    CHECK(region != MAP_FAILED);
    // All but a few dozen: the segments below take the rest, one mapping each.
    for (size_t i = 1; i + 64 < pages; i += 2) mprotect(region + i * page, page, PROT_READ);
    std::vector<std::shared_ptr<rma::SharedSegment>> made;
    bool named = false;
    for (int i = 0; i < 200 && !named; ++i) {
      try {
        made.push_back(rma::SharedSegment::create(4096));
      } catch (const rma::OutOfMemoryError& e) {
        named =
            has(e.what(), "memory mappings and vm.max_map_count allows") && has(e.what(), "sysctl vm.max_map_count=");
      }
    }
    CHECK(named);
    made.clear();
    munmap(region, pages * page);
  });

  return test::finish();
}
