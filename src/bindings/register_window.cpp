// Windows: memory the library owns (WindowMemory, exposed through the buffer protocol) and the
// Window calls. Python passes buffer addresses and keeps the buffers alive until the epoch's
// synchronization (see python/rma/window.py); here we convert and release the GIL.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <sys/mman.h>

#include <cstring>
#include <memory>

#include "errors.hpp"
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
      throw rma::RmaError("rma: cannot allocate " + std::to_string(bytes) + " bytes of window memory: " +
                          std::strerror(errno));
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

// (offset, element size, [(count, stride), ...]) from Python.
using RegionSpec = std::tuple<uint64_t, uint32_t, std::vector<std::pair<uint64_t, int64_t>>>;

rma::Region to_region(const RegionSpec& spec) {
  std::vector<rma::RegionDim> dims;
  for (const auto& [count, stride] : std::get<2>(spec)) dims.push_back({count, stride});
  return rma::Region(std::get<0>(spec), std::get<1>(spec), std::move(dims));
}

void* pointer(uintptr_t address) { return reinterpret_cast<void*>(address); }

}  // namespace

void register_window(py::module_& m) {
  py::class_<WindowMemory>(m, "WindowMemory", py::buffer_protocol())
      .def(py::init<size_t>(), py::arg("bytes"))
      .def_property_readonly("address", &WindowMemory::address)
      .def_property_readonly("nbytes", &WindowMemory::bytes)
      .def_buffer([](WindowMemory& memory) {
        return py::buffer_info(memory.data(), 1, py::format_descriptor<uint8_t>::format(), 1,
                               {memory.bytes()}, {1});
      });

  py::class_<rma::SharedSegment, std::shared_ptr<rma::SharedSegment>>(m, "SharedSegment", py::buffer_protocol())
      .def_static("create", [](size_t bytes) { return rma::SharedSegment::create(bytes); }, py::arg("bytes"))
      .def_property_readonly("address", [](rma::SharedSegment& segment) { return reinterpret_cast<uintptr_t>(segment.data()); })
      .def_property_readonly("nbytes", &rma::SharedSegment::bytes)
      .def_buffer([](rma::SharedSegment& segment) {
        return py::buffer_info(segment.data(), 1, py::format_descriptor<uint8_t>::format(), 1,
                               {segment.bytes()}, {1});
      });

  m.attr("PROC_NULL") = rma::kProcNull;

  using rma::Window;
  py::class_<Window, std::shared_ptr<Window>>(m, "Window")
      .def_static(
          "create",
          [](const rma::Communicator& comm, uintptr_t base, uint64_t bytes, const std::string& label, bool same_host) {
            return Window::create(comm, pointer(base), bytes, label, same_host);
          },
          py::arg("comm"), py::arg("base"), py::arg("bytes"), py::arg("label"), py::arg("same_host") = false,
          py::call_guard<py::gil_scoped_release>())
      .def_static(
          "create_dynamic",
          [](const rma::Communicator& comm, const std::string& label) {
            return Window::create_dynamic(comm, label);
          },
          py::arg("comm"), py::arg("label"), py::call_guard<py::gil_scoped_release>())
      .def_static(
          "create_shared",
          [](const rma::Communicator& comm, std::shared_ptr<rma::SharedSegment> segment, const std::string& label) {
            return Window::create_shared(comm, std::move(segment), label);
          },
          py::arg("comm"), py::arg("segment"), py::arg("label"), py::call_guard<py::gil_scoped_release>())
      .def("segment", &Window::segment)
      .def("attach", [](Window& window, uintptr_t base, uint64_t bytes) { window.attach(pointer(base), bytes); })
      .def("detach", [](Window& window, uintptr_t base) { window.detach(pointer(base)); })
      .def_property_readonly("id", &Window::id)
      .def_property_readonly("freed", &Window::freed)
      .def("target_bytes", &Window::target_bytes)
      // Calls take the NumPy arrays themselves (Python checked them: C-contiguous, the right
      // dtype, results writable): reading their data pointers here is far cheaper than an
      // address from __array_interface__. The pointers are taken before the GIL is released.
      .def(
          "put",
          [](Window& window, int target, const py::array& data, const RegionSpec& spec) {
            const void* source = data.data();
            rma::Region region = to_region(spec);
            py::gil_scoped_release release;
            window.put(target, source, region);
          },
          py::arg("target"), py::arg("data").noconvert(), py::arg("region"))
      .def(
          "get",
          [](Window& window, int target, py::array& out, const RegionSpec& spec) {
            void* into = out.mutable_data();
            rma::Region region = to_region(spec);
            py::gil_scoped_release release;
            window.get(target, into, region);
          },
          py::arg("target"), py::arg("out").noconvert(), py::arg("region"))
      .def(
          "accumulate",
          [](Window& window, int target, int op, int type, const py::array& data, const RegionSpec& spec) {
            const void* source = data.data();
            rma::Region region = to_region(spec);
            py::gil_scoped_release release;
            window.accumulate(target, static_cast<rma::ReduceOp>(op), static_cast<rma::ElementType>(type),
                              source, region);
          },
          py::arg("target"), py::arg("op"), py::arg("type"), py::arg("data").noconvert(), py::arg("region"))
      .def(
          "get_accumulate",
          [](Window& window, int target, int op, int type, const py::array& data, py::array& result,
             const RegionSpec& spec) {
            const void* source = data.data();
            void* into = result.mutable_data();
            rma::Region region = to_region(spec);
            py::gil_scoped_release release;
            window.get_accumulate(target, static_cast<rma::ReduceOp>(op), static_cast<rma::ElementType>(type),
                                  source, into, region);
          },
          py::arg("target"), py::arg("op"), py::arg("type"), py::arg("data").noconvert(),
          py::arg("result").noconvert(), py::arg("region"))
      .def(
          "compare_and_swap",
          [](Window& window, int target, int type, const py::array& data, const py::array& compare,
             py::array& result, const RegionSpec& spec) {
            const void* source = data.data();
            const void* comparand = compare.data();
            void* into = result.mutable_data();
            rma::Region region = to_region(spec);
            py::gil_scoped_release release;
            window.compare_and_swap(target, static_cast<rma::ElementType>(type), source, comparand, into, region);
          },
          py::arg("target"), py::arg("type"), py::arg("data").noconvert(), py::arg("compare").noconvert(),
          py::arg("result").noconvert(), py::arg("region"))
      .def("fence", &Window::fence, py::arg("mode"), py::call_guard<py::gil_scoped_release>())
      .def("post", &Window::post, py::arg("group"), py::arg("mode"), py::call_guard<py::gil_scoped_release>())
      .def("start", &Window::start, py::arg("group"), py::arg("mode"), py::call_guard<py::gil_scoped_release>())
      .def("complete", &Window::complete, py::call_guard<py::gil_scoped_release>())
      .def("wait", &Window::wait, py::call_guard<py::gil_scoped_release>())
      .def("test", &Window::test, py::call_guard<py::gil_scoped_release>())
      .def("lock", &Window::lock, py::call_guard<py::gil_scoped_release>())
      .def("try_lock", &Window::try_lock, py::call_guard<py::gil_scoped_release>())
      .def("unlock", &Window::unlock, py::call_guard<py::gil_scoped_release>())
      .def("lock_all", &Window::lock_all, py::call_guard<py::gil_scoped_release>())
      .def("unlock_all", &Window::unlock_all, py::call_guard<py::gil_scoped_release>())
      .def("flush", &Window::flush, py::call_guard<py::gil_scoped_release>())
      .def("flush_all", &Window::flush_all, py::call_guard<py::gil_scoped_release>())
      .def("target_idle", &Window::target_idle, py::call_guard<py::gil_scoped_release>())
      .def("in_passive_epoch", &Window::in_passive_epoch)
      .def("free", &Window::free, py::call_guard<py::gil_scoped_release>());
}
