// Where the facade's compiled calls go (facade_route.hpp).
#include "facade_route.hpp"

#include <stdexcept>
#include <string>

#include "window_methods.hpp"

namespace facade_route {

std::array<Own, kCalls> own{};

namespace {

// The names of the calls' methods, in the order of Call.
constexpr std::array<const char*, kCalls> kNames{
#define RMA_FACADE_CALL_NAME(enumerator, name) name,
    RMA_FACADE_CALLS(RMA_FACADE_CALL_NAME)
#undef RMA_FACADE_CALL_NAME
};

PyTypeObject* core_window = nullptr;         // rma._core.Window
std::array<PyObject*, kCalls> own_method{};  // its methods as its dictionary holds them

MethodFunction function_of(const char* name) {
  for (auto methods : {window_methods::data_call_methods(), window_methods::epoch_call_methods()}) {
    for (const MethodSpec& spec : methods) {
      if (std::strcmp(spec.parameters.method, name) == 0) return spec.function;
    }
  }
  throw std::logic_error(std::string("rma._core.FacadeWindow: rma._core.Window has no ") + name);
}

// What `name` resolves to on `type` (borrowed), as attribute lookup finds it on an instance's
// class: the first class of the MRO whose dictionary has it. Null: none (or an error, set).
PyObject* resolved(PyTypeObject* type, PyObject* name) {
  PyObject* mro = type->tp_mro;
  if (mro == nullptr) return nullptr;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(mro); ++i) {
    PyObject* dict = reinterpret_cast<PyTypeObject*>(PyTuple_GET_ITEM(mro, i))->tp_dict;
    PyObject* found = dict != nullptr ? PyDict_GetItemWithError(dict, name) : nullptr;
    if (found != nullptr || PyErr_Occurred()) return found;
  }
  return nullptr;
}

}  // namespace

void start(PyObject* window_type) {
  core_window = reinterpret_cast<PyTypeObject*>(Py_NewRef(window_type));
  for (int call = 0; call < kCalls; ++call) {
    own[call].function = function_of(kNames[call]);
    own[call].name = PyUnicode_InternFromString(kNames[call]);
    own_method[call] = own[call].name != nullptr ? resolved(core_window, own[call].name) : nullptr;
    if (own_method[call] == nullptr) throw std::logic_error(std::string("rma._core.Window lost ") + kNames[call]);
    Py_INCREF(own_method[call]);
  }
}

bool route_of(PyObject* window, Route& route) {
  route = Route{};
  if (!PyObject_TypeCheck(window, core_window)) return true;
  PyTypeObject* type = Py_TYPE(window);
  for (int call = 0; call < kCalls; ++call) {
    PyObject* method = resolved(type, own[call].name);
    if (method == nullptr && PyErr_Occurred()) return false;
    if (method != own_method[call]) route.overridden |= 1u << call;
  }
  route.served = true;
  return true;
}

PyObject* general(PyObject* self, const char* general, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  Py_ssize_t total = nargs + (kwnames != nullptr ? PyTuple_GET_SIZE(kwnames) : 0);
  std::array<PyObject*, 16> with_self;
  if (total + 1 > static_cast<Py_ssize_t>(with_self.size())) {
    PyErr_Format(PyExc_TypeError, "rma.compat: Win.%s takes at most %zu arguments", general + 1, with_self.size() - 1);
    return nullptr;
  }
  with_self[0] = self;
  std::memcpy(with_self.data() + 1, args, total * sizeof(PyObject*));
  PyObject* method = PyUnicode_InternFromString(general);
  if (method == nullptr) return nullptr;
  PyObject* result = PyObject_VectorcallMethod(method, with_self.data(), (nargs + 1), kwnames);
  Py_DECREF(method);
  return result;
}

}  // namespace facade_route
