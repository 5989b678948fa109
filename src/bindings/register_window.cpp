// Windows: memory the library owns (WindowMemory, SharedSegment: exposed through the buffer
// protocol) and the collective creation of the core's window (WindowCore). The calls on a
// window are rma._core.Window's (window_object.cpp).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <sys/mman.h>

#include <cstring>
#include <memory>

#include "base/errors.hpp"
#include "runtime/runtime.hpp"
#include "traced_call.hpp"
#include "window/window.hpp"

namespace py = pybind11;

namespace {

// Page-aligned, zero-filled memory, registered once by the window that uses it. It lives as
// long as any NumPy view of it, so win.local stays valid even after win.free().
class WindowMemory {
 public:
  explicit WindowMemory(size_t bytes) : bytes_(bytes) {
    if (bytes == 0) return;
    void* memory = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (memory == MAP_FAILED) {
      throw rma::RmaError("rma: cannot allocate " + std::to_string(bytes) +
                          " bytes of window memory: " + std::strerror(errno));
    }
    memory_ = memory;
  }
  ~WindowMemory() {
    if (memory_ != nullptr) munmap(memory_, bytes_);
  }
  WindowMemory(const WindowMemory&) = delete;
  WindowMemory& operator=(const WindowMemory&) = delete;
  uintptr_t address() const { return reinterpret_cast<uintptr_t>(memory_); }
  size_t bytes() const { return bytes_; }
  void* data() { return memory_ != nullptr ? memory_ : static_cast<void*>(&empty_); }

 private:
  void* memory_ = nullptr;
  size_t bytes_;
  char empty_ = 0;  // a valid pointer for a 0-byte buffer
};

void* pointer(uintptr_t address) { return reinterpret_cast<void*>(address); }

// A window's creation is the user's call (call: "Window.allocate", ...) in the trace: the GIL is
// held to read the call's line, then released while the ranks create the window together.
template <class Make>
std::shared_ptr<rma::Window> traced_creation(const std::string& call, Make&& make) {
  TracedCall traced_call(traced_name(call), rma::trace::Kind::Call, [] { return int64_t{-1}; });
  std::shared_ptr<rma::Window> window;
  {
    py::gil_scoped_release release;
    window = make();
  }
  TracedCall::note_object(window->id());
  return window;
}

}  // namespace

void register_window(py::module_& m) {
  py::class_<WindowMemory>(m, "WindowMemory", py::buffer_protocol())
      .def(py::init<size_t>(), py::arg("bytes"))
      .def_property_readonly("address", &WindowMemory::address)
      .def_property_readonly("nbytes", &WindowMemory::bytes)
      .def_buffer([](WindowMemory& memory) {
        return py::buffer_info(memory.data(), 1, py::format_descriptor<uint8_t>::format(), 1, {memory.bytes()}, {1});
      });

  // A shared window's memory, as WindowCore.segment(rank) gives it (the core makes it while
  // creating the window: WindowCore.create_shared).
  py::class_<rma::SharedSegment, std::shared_ptr<rma::SharedSegment>>(m, "SharedSegment", py::buffer_protocol())
      .def_property_readonly("address",
                             [](rma::SharedSegment& segment) { return reinterpret_cast<uintptr_t>(segment.data()); })
      .def_property_readonly("nbytes", &rma::SharedSegment::bytes)
      .def_buffer([](rma::SharedSegment& segment) {
        return py::buffer_info(segment.data(), 1, py::format_descriptor<uint8_t>::format(), 1, {segment.bytes()}, {1});
      });

  // The core's window, made collectively; rma._core.Window (window_object.cpp) makes the calls.
  using rma::Window;
  py::class_<Window, std::shared_ptr<Window>>(m, "WindowCore")
      .def_static(
          "create",
          [](const rma::Communicator& comm, uintptr_t base, uint64_t bytes, const std::string& label, bool near,
             const std::string& call, const std::string& note) -> std::shared_ptr<Window> {
            return traced_creation(call,
                                   [&] { return Window::create(comm, pointer(base), bytes, label, near, call, note); });
          },
          py::arg("comm"), py::arg("base"), py::arg("bytes"), py::arg("label"), py::arg("near") = false,
          py::arg("call") = "Window.create", py::arg("note") = std::string())
      .def_static(
          "create_dynamic",
          [](const rma::Communicator& comm, const std::string& label, const std::string& call,
             const std::string& note) -> std::shared_ptr<Window> {
            return traced_creation(call, [&] { return Window::create_dynamic(comm, label, call, note); });
          },
          py::arg("comm"), py::arg("label"), py::arg("call") = "Window.create_dynamic", py::arg("note") = std::string())
      // pooled: Window.allocate's memory, from this runtime's pool of freed windows' segments;
      // else a new segment (Window.allocate_shared).
      .def_static(
          "create_shared",
          [](const rma::Communicator& comm, uint64_t bytes, bool pooled, const std::string& label,
             const std::string& call, const std::string& note) -> std::shared_ptr<Window> {
            return traced_creation(call, [&] { return Window::create_shared(comm, bytes, pooled, label, call, note); });
          },
          py::arg("comm"), py::arg("bytes"), py::arg("pooled"), py::arg("label"),
          py::arg("call") = "Window.allocate_shared", py::arg("note") = std::string())
      .def("segment", &Window::segment)
      .def_property_readonly(
          "notes",
          [](const Window& window) {
            py::list notes;
            for (const std::string& note : window.notes()) notes.append(py::bytes(note));
            return notes;
          },
          "Every member's note given at creation, by rank (bytes).")
      .def("reach_name", &Window::reach_name, py::arg("rank"),
           "How this rank reaches rank now: \"shared-memory\" or \"libfabric\".")
      .def_property_readonly("id", &Window::id)
      .def_property_readonly("label", &Window::label)
      .def_property_readonly("freed", &Window::freed)
      .def("target_bytes", &Window::target_bytes)
      .def("check_rank", &Window::check_rank, py::arg("call"), py::arg("rank"), py::arg("allow_null"));
}
