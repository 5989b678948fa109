// Message buffers are allocated and freed at every send and receive. glibc maps each one above
// its mmap threshold (128 KiB at first) afresh and gives freed memory at the top of its heap
// back to the kernel, so a large message paid a page fault per 4 KiB, several times over:
// 1 MiB through an inbox cost 1.9 ms, against 0.25 ms once the buffers are reused. rma.init
// raises both thresholds (RMA_MALLOC_TUNING=0 leaves malloc alone).
#pragma once

#include <cstddef>

namespace rma {

inline constexpr size_t kMallocMmapThreshold = 64u << 20;   // allocations above it are mapped alone
inline constexpr size_t kMallocTrimThreshold = 128u << 20;  // free heap kept before giving any back

// Sets glibc's thresholds to the above; false where malloc takes no such setting.
bool tune_malloc() noexcept;

}  // namespace rma
