#include "call_site.hpp"

#include <Python.h>
#include <pybind11/pybind11.h>

#include <unordered_map>
#include <vector>

namespace py = pybind11;

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
  // (Sites are strings the checker's and the trace's records point to: never freed, one per place.)
  static const std::string unknown = "?";
  PyFrameObject* frame = PyEval_GetFrame();  // borrowed
  Py_XINCREF(frame);
  while (frame != nullptr) {
    PyCodeObject* code = PyFrame_GetCode(frame);
    Py_DECREF(code);  // (the frame holds it)
    SiteKey key{code, place_of(frame)};
    // A place seen before is the user's (only theirs are kept): one lookup, the traced call's
    // common case. Else the code's file says whether to keep it or look further out.
    if (auto known = sites->find(key); known != sites->end()) {
      Py_DECREF(frame);
      return known->second;
    }
    CodeInfo& info = info_of(code);
    if (!info.library) {
      auto [site, fresh] = sites->try_emplace(key);
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
