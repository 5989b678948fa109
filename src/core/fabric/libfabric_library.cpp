#include "fabric/libfabric_library.hpp"

#include <dlfcn.h>
#include <signal.h>

#include <link.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <vector>

#include "base/errors.hpp"

namespace rma::fabric {

namespace {

// The system's library, and (at find's calls below) the symbol versions that libfabric 1.17's
// headers bind these functions to (`nm -D` of a core linked against it): the ABI of fi_info and
// its attributes that rma was compiled with.
constexpr const char* kSystemLibrary = "libfabric.so.1";

struct Library {
  decltype(&fi_getinfo) getinfo;
  decltype(&fi_freeinfo) freeinfo;
  decltype(&fi_dupinfo) dupinfo;
  decltype(&fi_fabric) fabric;
  decltype(&fi_strerror) strerror;
  decltype(&fi_version) version;
};

std::atomic<const Library*> loaded{nullptr};

// The libraries the first load tries (use_library), and the one it opened.
std::mutex choice_mutex;
std::vector<LibraryChoice> candidates{{"", LibraryOrigin::system}};
std::string opened_path;
std::optional<LibraryChoice> opened;

const char* file_of(const LibraryChoice& choice) { return choice.file.empty() ? kSystemLibrary : choice.file.c_str(); }

// How an error names where a library came from.
const char* origin_name(LibraryOrigin origin) {
  switch (origin) {
    case LibraryOrigin::system: return "the system's";
    case LibraryOrigin::bundled: return "rma's own";
    case LibraryOrigin::setting: return "RMA_LIBFABRIC";
  }
  return "?";
}

// What an error says the user can do when no library loaded: about the first one tried, the
// one asked for (the default tries the system's first, rma's own after).
std::string remedy(const LibraryChoice& first) {
  switch (first.origin) {
    case LibraryOrigin::system: return "apt-get install libfabric1, or name one with RMA_LIBFABRIC=PATH";
    case LibraryOrigin::bundled: return "reinstall rma, or use the system's with RMA_LIBFABRIC=system";
    case LibraryOrigin::setting: return "RMA_LIBFABRIC names it; unset it to use the system's";
  }
  return "";
}

// While one lives, the process's signal handlers are kept: its destructor puts back every one
// that changed. Debian's libfabric pulls in libinfinipath (the psm provider), whose constructor
// installs handlers of its own for SIGINT, SIGTERM, SIGSEGV and SIGBUS when it is loaded: a
// Ctrl-C would then end the process with status 1 instead of raising KeyboardInterrupt (and
// end rma's interrupt chain, base/interrupts.hpp), a SIGTERM would exit 1, and a crash would
// not show as one (Python's faulthandler, AddressSanitizer's report).
class SignalHandlersKept {
 public:
  SignalHandlersKept() {
    for (int number = 1; number < NSIG; ++number) {
      struct sigaction action{};
      if (sigaction(number, nullptr, &action) == 0) kept_.push_back({number, action});
    }
  }
  ~SignalHandlersKept() {
    for (auto& [number, action] : kept_) {
      struct sigaction now{};
      if (sigaction(number, nullptr, &now) == 0 && now.sa_handler != action.sa_handler) {
        sigaction(number, &action, nullptr);
      }
    }
  }
  SignalHandlersKept(const SignalHandlersKept&) = delete;
  SignalHandlersKept& operator=(const SignalHandlersKept&) = delete;

 private:
  std::vector<std::pair<int, struct sigaction>> kept_;
};

// The symbol, or nullptr with `why` saying which is missing.
template <class Function>
Function find(void* handle, const std::string& path, const char* name, const char* version, std::string& why) {
  void* symbol = dlvsym(handle, name, version);
  if (symbol == nullptr && why.empty()) {
    why = path + " has no " + name + "@" + version + " (libfabric 1.17's interface)";
  }
  return reinterpret_cast<Function>(symbol);
}

std::string path_of(void* handle, const std::string& fallback) {
  link_map* map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) != 0 || map == nullptr || map->l_name == nullptr) return fallback;
  return map->l_name[0] != '\0' ? map->l_name : fallback;
}

// Provider settings rma chooses unless the user set them, in the environment, where libfabric
// reads them once, as its first fi_getinfo starts the providers:
//   FI_OFI_RXM_EAGER_LIMIT=65536: rxm (which gives tcp its reliable messages) sends a message
//     of up to this size in one go, straight from the sender's buffer into the one the
//     receiver posted (tcp's direct send and dynamic receive buffers), and a larger one by
//     rendezvous (the receiver reads it). At its default, rxm's buffer size (16 KiB), each of
//     rma's 64 KiB fragments (messages/message_assembler.hpp) took the rendezvous: messages
//     of 32 KiB and more (accumulates, strided puts) crossed hosts at about 1 GB/s. Measured
//     between the two hosts of the test bed, accumulate + flush of 32 KiB took 30-32 instead
//     of 46-48 us, of 256 KiB 121-135 instead of 231-255. (Raising the buffer size instead did
//     as much, but rxm's buffer pools are made of that size: 250 MB more per rank.)
void choose_provider_settings() { setenv("FI_OFI_RXM_EAGER_LIMIT", "65536", /*overwrite=*/0); }

// Loads `choice`; nullopt with `why` saying what is wrong with it (as the dynamic loader
// says, or a missing function, or a version older than the headers rma was compiled with).
std::optional<Library> load(const LibraryChoice& choice, std::string& path, std::string& why) {
  void* handle = nullptr;
  choose_provider_settings();
  {
    SignalHandlersKept kept;
    handle = dlopen(file_of(choice), RTLD_NOW | RTLD_LOCAL);
  }
  if (handle == nullptr) {
    const char* said = dlerror();
    why = said ? said : std::string(file_of(choice)) + ": not loaded";
    return std::nullopt;
  }
  // Never closed once used: its providers keep threads and atexit handlers for the life of the
  // process. One that is refused here has run no provider: closed.
  path = path_of(handle, file_of(choice));
  Library found{
      .getinfo = find<decltype(&fi_getinfo)>(handle, path, "fi_getinfo", "FABRIC_1.3", why),
      .freeinfo = find<decltype(&fi_freeinfo)>(handle, path, "fi_freeinfo", "FABRIC_1.3", why),
      .dupinfo = find<decltype(&fi_dupinfo)>(handle, path, "fi_dupinfo", "FABRIC_1.3", why),
      .fabric = find<decltype(&fi_fabric)>(handle, path, "fi_fabric", "FABRIC_1.1", why),
      .strerror = find<decltype(&fi_strerror)>(handle, path, "fi_strerror", "FABRIC_1.0", why),
      .version = find<decltype(&fi_version)>(handle, path, "fi_version", "FABRIC_1.0", why),
  };
  if (why.empty() && FI_VERSION_LT(found.version(), FI_VERSION(1, 17))) {
    uint32_t version = found.version();
    why = path + " is libfabric " + std::to_string(FI_MAJOR(version)) + "." + std::to_string(FI_MINOR(version)) +
          "; rma needs 1.17 or newer";
  }
  if (!why.empty()) {
    dlclose(handle);
    return std::nullopt;
  }
  return found;
}

const Library& library() {
  if (const Library* ready = loaded.load(std::memory_order_acquire)) return *ready;
  // A function-local static: the first caller loads, concurrent callers wait for it, and a
  // failed load is tried again by the next caller (and raises again).
  static const Library instance = [] {
    std::lock_guard lock(choice_mutex);
    std::string tried;
    for (const LibraryChoice& choice : candidates) {
      std::string path, why;
      if (std::optional<Library> found = load(choice, path, why)) {
        opened_path = std::move(path);
        opened = choice;
        return *found;
      }
      tried += std::string(tried.empty() ? "" : "; ") + origin_name(choice.origin) + ": " + why;
    }
    throw RmaError(
        "rma: libfabric could not be loaded: " + tried +
        ". Ranks on several hosts, RMA_TRANSPORT=libfabric and RMA_PROVIDER need it: " + remedy(candidates.front()));
  }();
  loaded.store(&instance, std::memory_order_release);
  return instance;
}

}  // namespace

void use_library(std::vector<LibraryChoice> wanted) {
  if (wanted.empty()) throw RmaError("rma: use_library: no libfabric to try");
  std::lock_guard lock(choice_mutex);
  if (opened) {  // (set under the lock, by the load)
    if (std::find(wanted.begin(), wanted.end(), *opened) != wanted.end()) return;
    throw RmaError("rma: this process loaded libfabric from " + opened_path + " already; it cannot load " +
                   file_of(wanted.front()));
  }
  candidates = std::move(wanted);
}

std::string library_path() {
  if (loaded.load(std::memory_order_acquire) == nullptr) return "";
  std::lock_guard lock(choice_mutex);
  return opened_path;
}

std::optional<LibraryOrigin> library_origin() {
  if (loaded.load(std::memory_order_acquire) == nullptr) return std::nullopt;
  std::lock_guard lock(choice_mutex);
  return opened->origin;
}

int getinfo(uint32_t version, const char* node, const char* service, uint64_t flags, const fi_info* hints,
            fi_info** info) {
  return library().getinfo(version, node, service, flags, hints, info);
}

void freeinfo(fi_info* info) { library().freeinfo(info); }

fi_info* dupinfo(const fi_info* info) { return library().dupinfo(info); }

int make_fabric(fi_fabric_attr* attributes, fid_fabric** fabric, void* context) {
  return library().fabric(attributes, fabric, context);
}

uint32_t version() { return library().version(); }

std::string error_text(int code) {
  const Library* ready = loaded.load(std::memory_order_acquire);
  return ready != nullptr ? ready->strerror(code) : "error " + std::to_string(code);
}

bool library_loaded() noexcept { return loaded.load(std::memory_order_acquire) != nullptr; }

}  // namespace rma::fabric
