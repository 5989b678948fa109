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

PyObject* call(PyObject* callable, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  MethodObject* method = as_method(callable);
  Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
  if (nargs < 1 || !PyObject_TypeCheck(args[0], method->owner)) {
    PyErr_Format(PyExc_TypeError, "%s.%s() needs an %s as its first argument", method->owner->tp_name,
                 method->spec->name, method->owner->tp_name);
    return nullptr;
  }
  return method->spec->function(args[0], args + 1, nargs - 1, kwnames);
}

PyObject* bind(PyObject* self, PyObject* object, PyObject*) {
  if (object == nullptr || object == Py_None) return Py_NewRef(self);  // from the class
  return PyMethod_New(self, object);
}

// The docstring: what follows the signature line.
PyObject* get_doc(PyObject* self, void*) {
  const char* doc = as_method(self)->spec->doc;
  const char* body = std::strstr(doc, "\n--\n\n");
  return PyUnicode_FromString(body != nullptr ? body + 5 : doc);
}

PyObject* get_name(PyObject* self, void*) { return PyUnicode_FromString(as_method(self)->spec->name); }

// "Window.put": the owner type's own name (rma._core.Window), then the method's.
PyObject* get_qualname(PyObject* self, void*) {
  const char* owner = as_method(self)->owner->tp_name;
  const char* dot = std::strrchr(owner, '.');
  return PyUnicode_FromFormat("%s.%s", dot != nullptr ? dot + 1 : owner, as_method(self)->spec->name);
}

// inspect.Signature of the text signature, built by rma's Python side (which can evaluate
// defaults such as rma.Op.SUM).
PyObject* get_signature(PyObject* self, void*) {
  try {
    const char* doc = as_method(self)->spec->doc;
    const char* end = std::strstr(doc, "\n--\n\n");
    std::string line = end != nullptr ? std::string(doc, end) : std::string(as_method(self)->spec->name) + "($self, /)";
    return py::module_::import("rma._signatures").attr("from_text")(line).release().ptr();
  } catch (py::error_already_set& error) {
    error.restore();
    return nullptr;
  }
}

PyObject* repr(PyObject* self) {
  MethodObject* method = as_method(self);
  return PyUnicode_FromFormat("<method '%s' of '%s' objects>", method->spec->name, method->owner->tp_name);
}

PyGetSetDef getset[] = {
    {"__doc__", get_doc, nullptr, nullptr, nullptr},
    {"__name__", get_name, nullptr, nullptr, nullptr},
    {"__qualname__", get_qualname, nullptr, nullptr, nullptr},
    {"__signature__", get_signature, nullptr, nullptr, nullptr},
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
  int failed = PyDict_SetItemString(type->tp_dict, spec.name, reinterpret_cast<PyObject*>(method));
  Py_DECREF(method);
  if (failed != 0) throw py::error_already_set();
  PyType_Modified(type);
}
