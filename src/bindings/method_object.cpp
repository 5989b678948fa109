#include "method_object.hpp"

#include <pybind11/pybind11.h>

#include <cstring>

namespace py = pybind11;

namespace {

struct MethodObject {
  PyObject_HEAD
  vectorcallfunc vectorcall;
  const MethodSpec* spec;
  PyTypeObject* owner;  // the type whose instances the method takes as self
};

MethodObject* as_method(PyObject* object) { return reinterpret_cast<MethodObject*>(object); }

const char* name_of(const MethodObject* method) { return method->spec->parameters.method; }

PyObject* call(PyObject* callable, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  MethodObject* method = as_method(callable);
  Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
  if (nargs < 1 || !PyObject_TypeCheck(args[0], method->owner)) {
    PyErr_Format(PyExc_TypeError, "%s.%s() needs an %s as its first argument", method->owner->tp_name, name_of(method),
                 method->owner->tp_name);
    return nullptr;
  }
  return method->spec->function(args[0], args + 1, nargs - 1, kwnames);
}

PyObject* bind(PyObject* self, PyObject* object, PyObject*) {
  if (object == nullptr || object == Py_None) return Py_NewRef(self);  // from the class
  return PyMethod_New(self, object);
}

PyObject* get_doc(PyObject* self, void*) { return PyUnicode_FromString(as_method(self)->spec->doc); }

PyObject* get_name(PyObject* self, void*) { return PyUnicode_FromString(name_of(as_method(self))); }

// "Window.put": the owner type's own name (rma._core.Window), then the method's.
PyObject* get_qualname(PyObject* self, void*) {
  const char* owner = as_method(self)->owner->tp_name;
  const char* dot = std::strrchr(owner, '.');
  return PyUnicode_FromFormat("%s.%s", dot != nullptr ? dot + 1 : owner, name_of(as_method(self)));
}

// The table itself, for rma._signatures and tests/test_signatures.py: a tuple of (name,
// default as a Python expression or None when required, keyword-only) per parameter.
PyObject* get_parameters(PyObject* self, void*) {
  try {
    const parameters::Parameters& table = as_method(self)->spec->parameters;
    py::tuple described(table.count);
    for (int i = 0; i < table.count; ++i) {
      py::object fallback = table.fallbacks[i] != nullptr ? py::object(py::str(table.fallbacks[i])) : py::none();
      described[i] = py::make_tuple(table.names[i], fallback, i >= table.positional);
    }
    return described.release().ptr();
  } catch (py::error_already_set& error) {
    error.restore();
    return nullptr;
  }
}

// inspect.Signature of the table, built by rma's Python side (which can evaluate defaults
// such as rma.Op.SUM).
PyObject* get_signature(PyObject* self, void*) {
  try {
    py::object described = py::reinterpret_steal<py::object>(get_parameters(self, nullptr));
    if (!described) throw py::error_already_set();
    return py::module_::import("rma._signatures").attr("from_parameters")(described).release().ptr();
  } catch (py::error_already_set& error) {
    error.restore();
    return nullptr;
  }
}

PyObject* repr(PyObject* self) {
  MethodObject* method = as_method(self);
  return PyUnicode_FromFormat("<method '%s' of '%s' objects>", name_of(method), method->owner->tp_name);
}

PyGetSetDef getset[] = {
    {"__doc__", get_doc, nullptr, nullptr, nullptr},
    {"__name__", get_name, nullptr, nullptr, nullptr},
    {"__qualname__", get_qualname, nullptr, nullptr, nullptr},
    {"__signature__", get_signature, nullptr, nullptr, nullptr},
    {"_parameters", get_parameters, nullptr, nullptr, nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

PyTypeObject* method_type() {
  static PyTypeObject type = [] {
    PyTypeObject t{PyVarObject_HEAD_INIT(nullptr, 0)};
    t.tp_name = "rma._core.WindowMethod";
    t.tp_basicsize = sizeof(MethodObject);
    t.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_METHOD_DESCRIPTOR;
    t.tp_vectorcall_offset = offsetof(MethodObject, vectorcall);
    t.tp_call = PyVectorcall_Call;
    t.tp_descr_get = bind;
    t.tp_repr = repr;
    t.tp_getset = getset;
    return t;
  }();
  return &type;
}

}  // namespace

void add_method(PyTypeObject* type, const MethodSpec& spec) {
  static bool ready = PyType_Ready(method_type()) == 0;
  if (!ready) throw py::error_already_set();
  auto* method = PyObject_New(MethodObject, method_type());
  if (method == nullptr) throw py::error_already_set();
  method->vectorcall = call;
  method->spec = &spec;
  method->owner = type;
  int failed = PyDict_SetItemString(type->tp_dict, spec.parameters.method, reinterpret_cast<PyObject*>(method));
  Py_DECREF(method);
  if (failed != 0) throw py::error_already_set();
  PyType_Modified(type);
}
