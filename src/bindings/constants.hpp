// rma's constants as Python objects, made once from the core's tables (register_constants.cpp):
// the enum classes rma.Op, rma.Mode and rma.LockType, PROC_NULL, and the NumPy dtype of each
// element type. Ops, modes and lock types are distinct types, not ints, so that one passed
// where another (or a rank) belongs is a TypeError rather than a silently different call.
#pragma once

#include <Python.h>

#include "elements/reduce.hpp"

namespace constants {

// value's op, if value is a member of rma.Op.
bool op_of(PyObject* value, rma::ReduceOp& op);
// value's lock type (rma.LOCK_EXCLUSIVE or rma.LOCK_SHARED), if it is a member of rma.LockType.
bool lock_type_of(PyObject* value, int& type);
// value's flags, if it is rma.Mode flags or a plain int (not a bool); the core checks the bits.
bool mode_of(PyObject* value, long& flags);
// The element type whose dtype is `dtype` (the canonical dtype object NumPy gives every array
// of that type, compared by identity first); Bytes for any other dtype.
rma::ElementType element_type_of(PyObject* dtype);

}  // namespace constants
