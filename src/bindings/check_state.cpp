#include "check_state.hpp"

#include <pybind11/numpy.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <unordered_map>

namespace py = pybind11;
using rma::check::Access;
using rma::check::AccessKind;

namespace {

// A digest of bytes: enough to see that they changed (not a defence against anyone). Eight
// independent lanes, each a multiply-xorshift chain over every eighth word: one chain waits
// some six cycles a word for its multiply and shift, eight keep the multiplier busy (a large
// put's origin is digested at the call and at its completion).
uint64_t digest_of(const std::byte* data, size_t size) {
  constexpr uint64_t kPrime = 0x100000001b3ULL;
  auto mix = [](uint64_t lane, uint64_t word) {
    lane = (lane ^ word) * kPrime;
    return lane ^ (lane >> 29);
  };
  uint64_t lanes[8];
  for (int k = 0; k < 8; ++k) lanes[k] = 0x9e3779b97f4a7c15ULL * static_cast<uint64_t>(k + 1) ^ size;
  size_t i = 0;
  for (; i + 64 <= size; i += 64) {
    uint64_t words[8];
    std::memcpy(words, data + i, 64);
    for (int k = 0; k < 8; ++k) lanes[k] = mix(lanes[k], words[k]);
  }
  for (; i + 8 <= size; i += 8) {
    uint64_t word;
    std::memcpy(&word, data + i, 8);
    lanes[0] = mix(lanes[0], word);
  }
  for (; i < size; ++i) lanes[1] = mix(lanes[1], static_cast<uint64_t>(data[i]));
  uint64_t hash = lanes[0];
  for (int k = 1; k < 8; ++k) hash = mix(hash, lanes[k]);
  return hash;
}

// An array's bytes, in C order (a copy for a strided array).
uint64_t digest_of(PyObject* array) {
  auto* header = py::detail::array_proxy(array);
  if (header->flags & py::detail::npy_api::NPY_ARRAY_C_CONTIGUOUS_) {
    size_t size = static_cast<size_t>(py::reinterpret_borrow<py::array>(array).nbytes());
    return digest_of(reinterpret_cast<const std::byte*>(header->data), size);
  }
  py::bytes copy = py::reinterpret_borrow<py::object>(array).attr("tobytes")();
  std::string_view bytes = copy;
  return digest_of(reinterpret_cast<const std::byte*>(bytes.data()), bytes.size());
}

size_t elements_of(PyObject* array) { return static_cast<size_t>(py::reinterpret_borrow<py::array>(array).size()); }

}  // namespace

py::object CheckState::stage(const arguments::Operand& result, PyObject* given) {
  if (result.array.ptr() != given || Py_TYPE(given) != py::detail::npy_api::get().PyArray_Type_ || result.bytes == 0) {
    return {};
  }
  PyObject* staged = PyByteArray_FromStringAndSize(nullptr, static_cast<Py_ssize_t>(result.bytes));
  if (staged == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(staged);
}

std::span<const rma::check::Span> CheckState::spans_of(const rma::Region& region) {
  spans_.clear();
  region.for_each_run([&](uint64_t offset, uint64_t length) { spans_.push_back({offset, offset + length}); });
  rma::check::merge_in_place(spans_);
  return spans_;
}

uint64_t CheckState::record(int target, const std::string& call, AccessKind kind, std::string_view op,
                            std::string_view dtype, std::span<const rma::check::Span> spans, PyObject* origin,
                            PyObject* result, PyObject* staged) {
  uint64_t serial = ++serial_;
  if (spans.empty()) return serial;
  if (checker_->awaits_post(target)) {  // start's post clock comes before the first access to that target
    py::gil_scoped_release released;
    checker_->take_post(target);
  }
  bool found = false;
  rma::check::AccessRef access =
      checker_->record(target, call, kind, op, dtype, spans, check_support::call_site(), found);
  if (staged != nullptr && result != nullptr) {  // (first: its digest is C's, so nothing comes between)
    watched_.push_back({target, serial, py::reinterpret_borrow<py::object>(result), digest_of(result), access, true,
                        py::reinterpret_borrow<py::object>(staged)});
  }
  if (origin != nullptr && elements_of(origin) > 0) {
    watched_.push_back(
        {target, serial, py::reinterpret_borrow<py::object>(origin), digest_of(origin), std::move(access), false, {}});
  }
  if (found) report();  // at the call itself
  return serial;
}

template <class Done>
void CheckState::finish_watches(Done&& done) {
  finishing_.clear();
  size_t kept = 0;
  for (Watched& entry : watched_) {
    if (done(entry)) {
      finishing_.push_back(std::move(entry));
    } else {
      watched_[kept++] = std::move(entry);
    }
  }
  watched_.resize(kept);
  if (finishing_.empty()) return;
  std::vector<Watched> entries = std::move(finishing_);  // (finish may call back into Python)
  finishing_ = {};
  finish(entries);
  entries.clear();
  finishing_ = std::move(entries);
}

void CheckState::finish(std::span<const Watched> entries) {
  // Every digest before any copy: two calls that fill one array (an error too) must not make
  // each other's change.
  std::optional<std::string> found;
  for (const Watched& entry : entries) {
    if (found || digest_of(entry.array.ptr()) == entry.digest) continue;
    const Access& access = *entry.access;
    found = entry.result
                ? "rma: RMA_CHECK: the result array of " + rma::check::describe(access) +
                      " changed before the call completed at rank " + std::to_string(access.origin_rank) +
                      ": the library may fill it until the flush, flush_local, unlock, fence, complete or request "
                      "wait that completes the call; read or change it only after that call"
                : "rma: RMA_CHECK: the origin array of " + rma::check::describe(access) +
                      " changed before the call completed at rank " + std::to_string(access.origin_rank) +
                      ": the library may read it until the flush, flush_local, unlock, fence, complete or request "
                      "wait that completes the call; change it after that call (or pass a copy)";
  }
  for (const Watched& entry : entries) {
    if (entry.result) {
      std::memcpy(py::detail::array_proxy(entry.array.ptr())->data, PyByteArray_AS_STRING(entry.staged.ptr()),
                  static_cast<size_t>(PyByteArray_GET_SIZE(entry.staged.ptr())));
    }
  }
  checker_->keep(std::move(found));
}

void CheckState::completed_here(std::span<const int> targets) {
  finish_watches(
      [&](const Watched& entry) { return std::find(targets.begin(), targets.end(), entry.target) != targets.end(); });
}

void CheckState::completed_everywhere() {
  finish_watches([](const Watched&) { return true; });
}

void CheckState::request_completed(int target, uint64_t serial) {
  finish_watches([&](const Watched& entry) { return entry.target == target && entry.serial == serial; });
  report();
}

void CheckState::flushed(std::span<const int> targets, bool local) {
  if (!local) checker_->complete(targets);  // (a flush_local orders nothing at the target)
  completed_here(targets);
  if (!local) checker_->send_batches(targets);
  checker_->drain();
  report();
}

void CheckState::report() {
  std::optional<std::string> found = checker_->take_report();
  if (!found) return;
  static PyObject* reporter = py::object(py::module_::import("rma.check").attr("report")).release().ptr();
  py::str message(*found);
  PyObject* done = PyObject_CallOneArg(reporter, message.ptr());
  if (done == nullptr) throw py::error_already_set();
  Py_DECREF(done);
}

void CheckState::fenced(const char* call) {
  completed_everywhere();
  py::gil_scoped_release released;
  exchange_for_fence(call);
}

void CheckState::exchange_for_fence(const char* call) {
  checker_->exchange_all([call] { return std::string(call) + " (RMA_CHECK's exchange of accesses)"; });
}

void CheckState::posting() {
  py::gil_scoped_release released;
  checker_->posting();
}

void CheckState::posted() {
  static const std::string& kExposure = rma::check::interned("exposure (post)");
  checker_->new_epoch(kExposure);
}

void CheckState::started(std::vector<int> group) {
  checker_->expect_posts(group);
  access_group_ = std::move(group);
  static const std::string& kStart = rma::check::interned("start");
  checker_->new_epoch(kStart);
}

void CheckState::completing(rma::Window& core) {
  py::gil_scoped_release released;
  core.await_posts("complete");
  checker_->completing(access_group_);
}

void CheckState::completed() {
  std::vector<int> group = std::move(access_group_);
  access_group_.clear();
  completed_here(group);
  report();
}

void CheckState::waited() {
  {
    py::gil_scoped_release released;
    checker_->waited();
  }
  report();
}

void CheckState::locked(int target, bool exclusive) {
  checker_->locked(target, exclusive);
  locks_[target] = exclusive;
}

void CheckState::locked_all() {
  checker_->locked_all();
  lock_all_ = true;
}

void CheckState::unlocking(int target) {
  auto lock = locks_.find(target);
  if (lock == locks_.end()) return;  // (a lock that _try_lock took, say: not the checker's)
  bool exclusive = lock->second;
  locks_.erase(lock);
  checker_->unlocking(std::span<const int>(&target, 1), exclusive);
}

void CheckState::unlocking_all() {
  if (!lock_all_) return;
  lock_all_ = false;
  checker_->unlocking(checker_->everyone(), false);
}

void CheckState::synced() {
  checker_->drain(/*poll=*/true);
  report();
}

void CheckState::unlocked(std::span<const int> targets) {
  completed_here(targets);
  checker_->drain();
  report();
}

namespace check_support {

namespace {

// Where rma's and NumPy's Python files are: frames there are not the user's.
const std::vector<std::string>& library_dirs() {
  static const std::vector<std::string> dirs = [] {
    py::module_ os_path = py::module_::import("os.path");
    std::vector<std::string> found;
    for (const char* module : {"rma", "numpy"}) {
      py::object file = py::module_::import(module).attr("__file__");
      found.push_back(os_path.attr("dirname")(os_path.attr("abspath")(file)).cast<std::string>() + "/");
    }
    return found;
  }();
  return dirs;
}

struct CodeInfo {
  bool library;
  std::string file;  // its base name
};

// By code object; each one is kept alive (so its address is not reused for another).
CodeInfo& info_of(PyCodeObject* code) {
  static auto* known = new std::unordered_map<PyCodeObject*, CodeInfo>();
  auto found = known->find(code);
  if (found != known->end()) return found->second;
  py::object name = py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(code)).attr("co_filename");
  std::string path = name.cast<std::string>();
  bool library = false;
  for (const std::string& dir : library_dirs()) library = library || path.starts_with(dir);
  size_t slash = path.rfind('/');
  Py_INCREF(code);
  return known->emplace(code, CodeInfo{library, slash == std::string::npos ? path : path.substr(slash + 1)})
      .first->second;
}

// A frame's place in its code: the last instruction where Python has it (3.11 on), else the
// line, which Python computes from the line table at each ask.
struct SiteKey {
  PyCodeObject* code;
  int place;
  bool operator==(const SiteKey&) const = default;
};
struct SiteHash {
  size_t operator()(const SiteKey& key) const {
    return std::hash<void*>()(key.code) ^ (static_cast<size_t>(key.place) * 0x9e3779b97f4a7c15ULL);
  }
};

int place_of(PyFrameObject* frame) {
#if PY_VERSION_HEX >= 0x030B0000
  return PyFrame_GetLasti(frame);
#else
  return PyFrame_GetLineNumber(frame);
#endif
}

}  // namespace

const std::string& call_site() {
  static auto* sites = new std::unordered_map<SiteKey, std::string, SiteHash>();  // (elements never move)
  // (Sites are strings the checker's records point to: never freed, and one per place.)
  static const std::string unknown = "?";
  PyFrameObject* frame = PyEval_GetFrame();  // borrowed
  Py_XINCREF(frame);
  while (frame != nullptr) {
    PyCodeObject* code = PyFrame_GetCode(frame);
    CodeInfo& info = info_of(code);
    Py_DECREF(code);
    if (!info.library) {
      auto [site, fresh] = sites->try_emplace(SiteKey{code, place_of(frame)});
      if (fresh) site->second = info.file + ":" + std::to_string(PyFrame_GetLineNumber(frame));
      Py_DECREF(frame);
      return site->second;
    }
    PyFrameObject* back = PyFrame_GetBack(frame);
    Py_DECREF(frame);
    frame = back;
  }
  return unknown;
}

}  // namespace check_support
