#include "base/malloc_tuning.hpp"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace rma {

bool tune_malloc() noexcept {
#if defined(__GLIBC__)
  return mallopt(M_MMAP_THRESHOLD, static_cast<int>(kMallocMmapThreshold)) == 1 &&
         mallopt(M_TRIM_THRESHOLD, static_cast<int>(kMallocTrimThreshold)) == 1;
#else
  return false;
#endif
}

}  // namespace rma
