// libfabric's exported functions, found at run time in libfabric.so.1. The core links no
// libfabric: a job whose ranks share one host moves everything through shared memory
// (host/) and never loads it, which saves each of its processes about 0.2 s of start-up
// (Debian's libfabric pulls in libibverbs, libpsm and libpsm2, whose constructors sleep, and
// its verbs provider reads /proc/kallsyms at the first fi_getinfo). The functions below are all
// that libfabric exports and rma calls; every other fi_* call is an inline function of
// libfabric's headers that goes through the operation tables of the objects these return.
//
// Each is looked up at the symbol version the headers rma was compiled with bind to (the
// struct layouts it was compiled with), never at whatever version a newer library makes
// the default.
#pragma once

#include <rdma/fabric.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace rma::fabric {

// Where a libfabric to load comes from: what `--info` says of it, and what an error advises.
enum class LibraryOrigin {
  system,   // libfabric.so.1 as the dynamic loader finds it (file "")
  bundled,  // the one a wheel of rma carries (python/rma/_libfabric)
  setting,  // a path named by RMA_LIBFABRIC
};
struct LibraryChoice {
  std::string file;  // "" for the system's
  LibraryOrigin origin;
  bool operator==(const LibraryChoice&) const = default;
};

// The libraries the first load tries, in order (RMA_LIBFABRIC, judged by rma._job.settings):
// the first that loads and is libfabric 1.17 or newer is used. Throws RmaError once one is
// loaded, unless it is among them: a process holds one libfabric.
void use_library(std::vector<LibraryChoice> candidates);

// The file of the loaded library, as the dynamic loader resolved it; "" before any load.
std::string library_path();
// Where the loaded library came from; nullopt before any load.
std::optional<LibraryOrigin> library_origin();

// The first call of any of these loads the library (once per process, thread-safe). Loading
// throws RmaError naming the library, what the dynamic loader said and how to install it.
int getinfo(uint32_t version, const char* node, const char* service, uint64_t flags, const fi_info* hints,
            fi_info** info);
void freeinfo(fi_info* info);
fi_info* dupinfo(const fi_info* info);  // dupinfo(nullptr): empty hints (fi_allocinfo)
int make_fabric(fi_fabric_attr* attributes, fid_fabric** fabric, void* context);
uint32_t version();
// fi_strerror's text for a positive FI_E* / errno code; never loads the library (an error
// code exists only once a call into it returned one).
std::string error_text(int code);

// Whether this process has loaded libfabric (through these functions).
bool library_loaded() noexcept;

}  // namespace rma::fabric
