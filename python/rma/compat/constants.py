"""The integer constants of the mpi4py facade (MPI.UNDEFINED, MPI.LOCK_SHARED, MPI.MODE_*...).

Where rma has the same notion, the value is rma's, so that it can be passed on unchanged.
"""

from __future__ import annotations

import rma as _rma

UNDEFINED = -32766
ANY_SOURCE = _rma.ANY_SOURCE
ANY_TAG = _rma.ANY_TAG
PROC_NULL = _rma.PROC_NULL
ROOT = -3
KEYVAL_INVALID = -1

# The predefined keyvals of communicators (Comm.Get_attr; attributes.py gives their values).
# Numbered apart from the windows' keyvals below, so that one kind's keyval is refused by the other.
TAG_UB, HOST, IO, WTIME_IS_GLOBAL, UNIVERSE_SIZE, APPNUM, LASTUSEDCODE = range(101, 108)

# Group and communicator comparison.
IDENT, CONGRUENT, SIMILAR, UNEQUAL = 0, 1, 2, 3

# Communicator split types.
COMM_TYPE_SHARED = 1

# Lock types and assertion modes.
LOCK_EXCLUSIVE = 234
LOCK_SHARED = 235
MODE_NOCHECK = _rma.Mode.NOCHECK.value
MODE_NOSTORE = _rma.Mode.NOSTORE.value
MODE_NOPUT = _rma.Mode.NOPUT.value
MODE_NOPRECEDE = _rma.Mode.NOPRECEDE.value
MODE_NOSUCCEED = _rma.Mode.NOSUCCEED.value

# Window attributes (keyvals) and their values.
WIN_BASE, WIN_SIZE, WIN_DISP_UNIT, WIN_CREATE_FLAVOR, WIN_MODEL = 1, 2, 3, 4, 5
WIN_FLAVOR_CREATE, WIN_FLAVOR_ALLOCATE, WIN_FLAVOR_DYNAMIC, WIN_FLAVOR_SHARED = 1, 2, 3, 4
WIN_SEPARATE, WIN_UNIFIED = 1, 2

# Thread levels: rma's calls are thread-safe.
THREAD_SINGLE, THREAD_FUNNELED, THREAD_SERIALIZED, THREAD_MULTIPLE = 0, 1, 2, 3

# Datatype constructors' array orders.
ORDER_C, ORDER_F = 0, 1
ORDER_FORTRAN = ORDER_F

VERSION, SUBVERSION = 3, 1
MAX_PROCESSOR_NAME = 256
MAX_ERROR_STRING = 512
MAX_OBJECT_NAME = 128
MAX_INFO_KEY = 255
MAX_INFO_VAL = 1024


# What MPI.py takes (its star import): the constants, not the names this module imports.
__all__ = sorted(name for name in list(globals()) if name.isupper() and not name.startswith("_"))
