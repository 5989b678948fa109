#include "pending_arrays.hpp"

#include <pybind11/numpy.h>

#include <algorithm>
#include <vector>

#include "base/errors.hpp"
#include "call_site.hpp"
#include "check_state.hpp"

namespace py = pybind11;
using rma::check::Span;
using rma::check::Spans;

namespace pending_arrays {

namespace {

PyTypeObject* ndarray() { return py::detail::npy_api::get().PyArray_Type_; }

// As CPython's __class__ assignment: a heap type is referenced by each of its instances.
void set_class(PyObject* object, PyTypeObject* to) {
  PyTypeObject* from = Py_TYPE(object);
  if (from == to) return;
  if (to->tp_flags & Py_TPFLAGS_HEAPTYPE) Py_INCREF(to);
  Py_SET_TYPE(object, to);
  if (from->tp_flags & Py_TPFLAGS_HEAPTYPE) Py_DECREF(from);
}

// An instance of a heap type holds a reference to it: ndarray's dealloc frees the array, this
// lets the type go.
void pending_dealloc(PyObject* self) {
  PyTypeObject* type = Py_TYPE(self);
  ndarray()->tp_dealloc(self);
  Py_DECREF(type);
}

bool ours(PyObject* object) { return Py_TYPE(object) == ndarray() || Py_TYPE(object) == pending_type(); }

// The array and each array it is a view of, as long as they are plain (or pending) ndarrays.
template <class Each>
void for_each_base(PyObject* array, Each&& each) {
  for (PyObject* object = array; object != nullptr && ours(object); object = py::detail::array_proxy(object)->base) {
    each(object);
  }
}

// How many pending calls hold each array whose class was changed (each is alive meanwhile:
// the checker holds the result array, and a view holds its bases), by address. (A sorted
// vector: a map's node for each get cost more than the rest of its watch.)
using Count = std::pair<PyObject*, int>;
std::vector<Count>& watched() {
  static auto* counts = new std::vector<Count>();
  return *counts;
}

std::vector<Count>::iterator watched_at(PyObject* object) {
  return std::lower_bound(watched().begin(), watched().end(), object,
                          [](const Count& count, PyObject* key) { return count.first < key; });
}

bool is_watched(PyObject* object) {
  auto at = watched_at(object);
  return at != watched().end() && at->first == object;
}

// The bytes of the array a load or store touched (reused).
Spans& scratch() {
  static auto* bytes = new Spans();
  return *bytes;
}

constexpr uint64_t kExactElements = uint64_t{1} << 16;

}  // namespace

PyTypeObject* pending_type() {
  static PyTypeObject* type = (py::module_::import("rma.check.pending"), made_type());
  return type;
}

PyTypeObject* made_type() {
  static PyTypeObject* type = [] {
    static PyType_Slot slots[] = {
        {Py_tp_dealloc, reinterpret_cast<void*>(pending_dealloc)},
        {Py_tp_doc, const_cast<char*>("A result array (or an array it is a view of) whose call has not completed yet, "
                                      "under RMA_CHECK: its loads and stores are checked.")},
        {0, nullptr}};
    static PyType_Spec spec = {"rma.check.pending.PendingArray", 0, 0, Py_TPFLAGS_DEFAULT, slots};
    py::tuple bases = py::make_tuple(py::handle(reinterpret_cast<PyObject*>(ndarray())));
    PyObject* made = PyType_FromSpecWithBases(&spec, bases.ptr());  // (kept for the process)
    if (made == nullptr) throw py::error_already_set();
    auto* pending = reinterpret_cast<PyTypeObject*>(made);
    PyTypeObject* plain = ndarray();
    bool same = pending->tp_basicsize == plain->tp_basicsize && pending->tp_itemsize == plain->tp_itemsize &&
                pending->tp_dictoffset == plain->tp_dictoffset &&
                pending->tp_weaklistoffset == plain->tp_weaklistoffset && pending->tp_free == plain->tp_free &&
                (pending->tp_flags & Py_TPFLAGS_HAVE_GC) == (plain->tp_flags & Py_TPFLAGS_HAVE_GC);
    if (!same) throw rma::RmaError("rma: RMA_CHECK: PendingArray was not made with ndarray's layout");
    return pending;
  }();
  return type;
}

rma::check::PendingMemory& memory() {
  static auto* pending = new rma::check::PendingMemory();  // (never destroyed: arrays may outlive the module)
  return *pending;
}

void bytes_of(PyObject* array, Spans& bytes) {
  bytes.clear();
  auto* header = py::detail::array_proxy(array);
  auto start = reinterpret_cast<uint64_t>(header->data);
  uint64_t size = 1;
  for (int d = 0; d < header->nd; ++d) size *= static_cast<uint64_t>(header->dimensions[d]);
  auto itemsize = static_cast<uint64_t>(py::detail::npy_api::get().PyArray_RUNTIME_VERSION_ < 0x12
                                            ? py::detail::array_descriptor1_proxy(header->descr)->elsize
                                            : py::detail::array_descriptor2_proxy(header->descr)->elsize);
  if (size == 0) return;
  if (header->flags & (py::detail::npy_api::NPY_ARRAY_C_CONTIGUOUS_ | py::detail::npy_api::NPY_ARRAY_F_CONTIGUOUS_)) {
    bytes.push_back({start, start + size * itemsize});
    return;
  }
  std::vector<std::pair<uint64_t, int64_t>> dims;
  int64_t low = 0, high = 0;
  for (int d = 0; d < header->nd; ++d) {
    auto count = static_cast<int64_t>(header->dimensions[d]);
    auto stride = static_cast<int64_t>(header->strides[d]);
    dims.emplace_back(count, stride);
    (stride < 0 ? low : high) += (count - 1) * stride;
  }
  if (size > kExactElements) {
    bytes.push_back({start + low, start + high + itemsize});
  } else {
    bytes = rma::check::strided_spans(start, itemsize, dims);
  }
}

bool watchable(PyObject* array) { return ours(array); }

void watch(PyObject* array) {
  PyTypeObject* pending = pending_type();
  for_each_base(array, [&](PyObject* object) {
    auto at = watched_at(object);
    if (at != watched().end() && at->first == object) {
      ++at->second;
    } else {
      watched().insert(at, Count{object, 1});
      set_class(object, pending);
    }
  });
}

void unwatch(PyObject* array) {
  for_each_base(array, [&](PyObject* object) {
    auto at = watched_at(object);
    if (at == watched().end() || at->first != object || --at->second > 0) return;
    watched().erase(at);
    set_class(object, ndarray());
  });
}

void touched(PyObject* self, PyObject* part, bool store) {
  Spans& bytes = scratch();
  bytes_of(part, bytes);
  std::optional<std::string> found = memory().touched(bytes, store, call_site());
  if (found) {
    check_support::report(*found);
    return;
  }
  // A view taken while its bases were pending, used once nothing it holds is: plain again.
  if (Py_TYPE(self) == pending_type() && !is_watched(self)) {
    bytes_of(self, bytes);
    if (!memory().uses(bytes)) set_class(self, ndarray());
  }
}

}  // namespace pending_arrays
