// How the reads of a pending result array are seen under RMA_CHECK (python/rma/check/pending.py):
// from the call until its completion, the caller's array, and each ndarray it is a view of,
// has its class changed in place to PendingArray, an ndarray subclass of the same layout whose
// loads and stores (hooks that python/rma/check/seen.py gives it) come back here
// (check_touched) to be compared with the process's pending arrays (check/pending_memory.hpp).
// The completion changes the class back. A plain ndarray's class cannot be assigned from
// Python (its type is static), and a class made in Python is always collected by the garbage
// collector, so its instances carry a header a plain array lacks: PendingArray is made here,
// without that header, and the class is changed as CPython's own __class__ assignment does it.
#pragma once

#include <pybind11/pybind11.h>

#include "check/pending_memory.hpp"

namespace pending_arrays {

// The class of pending result arrays, as made (rma.check.pending gives it its hooks when it is
// imported), and once it has them.
PyTypeObject* made_type();
PyTypeObject* pending_type();

// The process's arrays in use by calls not completed yet, every checked window's.
rma::check::PendingMemory& memory();
// The addresses of an ndarray's bytes, into `bytes` (a strided one of more than 65,536
// elements: from its first byte to its last).
void bytes_of(PyObject* array, rma::check::Spans& bytes);
// Whether `array` may be watched as a pending result: a plain ndarray (or one watched already).
bool watchable(PyObject* array);
// A result array pending from now on (counted: two calls may fill one array, erroneously).
void watch(PyObject* array);
// Its call completed: the class goes back once no call pending on it remains.
void unwatch(PyObject* array);
// A load or store (store = true) of `part`, a part of the seen array `self`, by the program.
void touched(PyObject* self, PyObject* part, bool store);

}  // namespace pending_arrays
