// One compiled method's parameters: the one source of its signature. The same table matches a
// call's arguments (arguments::match), gives the method its name, its __signature__ and its
// `_parameters` (method_object.cpp), and is what tests/test_signatures.py compares with
// _core.pyi and with the Python methods that take the same call (rma.compat's MPI.Win, the
// window and communicator kinds of RMA_CHECK and RMA_MODEL=separate).
#pragma once

#include <array>
#include <initializer_list>
#include <stdexcept>

namespace parameters {

struct Parameter {
  const char* name;
  // The default, as a Python expression evaluated in the rma package ("0", "None",
  // "rma.Op.SUM"); null: the argument is required.
  const char* fallback = nullptr;
};

// At most this many parameters: the methods match their arguments into slots on the stack.
inline constexpr int kMostParameters = 6;

struct Parameters {
  // `list`: in signature order; the first `positional` may be given by position, the rest by
  // keyword only. A table that Python could not write as a signature (a required parameter
  // after one with a default, too many) does not compile: a constexpr table's construction
  // throws at compile time.
  constexpr Parameters(const char* method, std::initializer_list<Parameter> list, int positional,
                       const char* owner = "win")
      : method(method), count(static_cast<int>(list.size())), positional(positional), owner(owner) {
    if (count > kMostParameters) throw std::logic_error("more parameters than a method's slots");
    if (positional > count) throw std::logic_error("more positional parameters than parameters");
    int at = 0;
    for (const Parameter& parameter : list) {
      names[at] = parameter.name;
      fallbacks[at] = parameter.fallback;
      ++at;
    }
    while (required < count && fallbacks[required] == nullptr) ++required;
    for (int i = required; i < count; ++i) {
      if (fallbacks[i] == nullptr) throw std::logic_error("a required parameter after one with a default");
    }
  }

  const char* method;  // its name: "put", for messages "win.put() missing ..."
  std::array<const char*, kMostParameters> names{};
  std::array<const char*, kMostParameters> fallbacks{};
  int count;
  int required = 0;  // the first `required` must be given, the others have defaults
  int positional;
  const char* owner;  // how messages name the object: "win.put()", "comm.send()"
};

}  // namespace parameters
