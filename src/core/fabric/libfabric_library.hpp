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
#include <string>

namespace rma::fabric {

// Which library the first load opens: "" for the system's ("libfabric.so.1", as the dynamic
// loader finds it, the default), or a path (RMA_LIBFABRIC, judged by rma._job.settings).
// Throws RmaError once a different one is loaded: a process holds one libfabric.
void use_library(const std::string& name);

// The file of the loaded library, as the dynamic loader resolved it; "" before any load.
std::string library_path();

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
