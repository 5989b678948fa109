#include "fabric/libfabric_library.hpp"

#include <dlfcn.h>
#include <signal.h>

#include <link.h>

#include <atomic>
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

// The library the first load opens (use_library), and the file it opened.
std::mutex choice_mutex;
std::string chosen = kSystemLibrary;
std::string opened_path;

// What an error says the user can do about a library that did not load.
std::string remedy() {
  return chosen == kSystemLibrary ? "apt-get install libfabric1, or name one with RMA_LIBFABRIC=PATH"
                                  : "RMA_LIBFABRIC names it; unset it to use the system's";
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

template <class Function>
Function find(void* handle, const std::string& library, const char* name, const char* version) {
  void* symbol = dlvsym(handle, name, version);
  if (symbol == nullptr) {
    throw RmaError("rma: " + library + " has no " + name + "@" + version +
                   " (libfabric 1.17's interface): use libfabric 1.17 or newer (" + remedy() + ")");
  }
  return reinterpret_cast<Function>(symbol);
}

std::string path_of(void* handle, const std::string& fallback) {
  link_map* map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) != 0 || map == nullptr || map->l_name == nullptr) return fallback;
  return map->l_name[0] != '\0' ? map->l_name : fallback;
}

const Library& library() {
  if (const Library* ready = loaded.load(std::memory_order_acquire)) return *ready;
  // A function-local static: the first caller loads, concurrent callers wait for it, and a
  // failed load is tried again by the next caller (and raises again).
  static const Library instance = [] {
    std::lock_guard lock(choice_mutex);
    void* handle = nullptr;
    {
      SignalHandlersKept kept;
      handle = dlopen(chosen.c_str(), RTLD_NOW | RTLD_LOCAL);
    }
    if (handle == nullptr) {
      const char* why = dlerror();
      throw RmaError("rma: libfabric could not be loaded (" + (why ? std::string(why) : chosen) +
                     "); ranks on several hosts, RMA_TRANSPORT=libfabric and RMA_PROVIDER need it: " + remedy());
    }
    // Never closed: its providers keep threads and atexit handlers for the life of the process.
    std::string path = path_of(handle, chosen);
    Library found{
        .getinfo = find<decltype(&fi_getinfo)>(handle, path, "fi_getinfo", "FABRIC_1.3"),
        .freeinfo = find<decltype(&fi_freeinfo)>(handle, path, "fi_freeinfo", "FABRIC_1.3"),
        .dupinfo = find<decltype(&fi_dupinfo)>(handle, path, "fi_dupinfo", "FABRIC_1.3"),
        .fabric = find<decltype(&fi_fabric)>(handle, path, "fi_fabric", "FABRIC_1.1"),
        .strerror = find<decltype(&fi_strerror)>(handle, path, "fi_strerror", "FABRIC_1.0"),
        .version = find<decltype(&fi_version)>(handle, path, "fi_version", "FABRIC_1.0"),
    };
    opened_path = std::move(path);
    return found;
  }();
  loaded.store(&instance, std::memory_order_release);
  return instance;
}

}  // namespace

void use_library(const std::string& name) {
  const std::string& wanted = name.empty() ? kSystemLibrary : name;
  std::lock_guard lock(choice_mutex);
  if (wanted == chosen) return;
  if (!opened_path.empty()) {  // (set under the lock, by the load)
    throw RmaError("rma: this process loaded libfabric from " + opened_path + " already; it cannot load " + wanted);
  }
  chosen = wanted;
}

std::string library_path() {
  if (loaded.load(std::memory_order_acquire) == nullptr) return "";
  std::lock_guard lock(choice_mutex);
  return opened_path;
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
