"""mpi4py's `MPI` module over rma: `from rma.compat import MPI` (or, under `rmarun --mpi4py`,
`from mpi4py import MPI`) gives mpi4py's names for what rma covers.

The job is joined at the first use of COMM_WORLD or COMM_SELF (mpi4py joins at import). A call
the facade does not cover raises NotImplementedError naming it. rma's errors arrive as
MPI.Exception carrying rma's own message.
"""

import socket as _socket
import time as _time
from typing import Any as _Any

import rma as _rma

from .._job import join as _join
from . import collective_worker as _collective_worker
from .collectives import *  # noqa: F403 - its __all__
from .comm import COMM_NULL, COMM_SELF, COMM_WORLD, Comm, Intracomm
from .constants import *  # noqa: F403 - MPI's integer constants, all of them public
from .datatypes import *  # noqa: F403 - the predefined datatypes, all of them public
from .datatypes import Datatype
from .errhandler import *  # noqa: F403 - its __all__
from .errors import *  # noqa: F403 - the error classes
from .generalized import *  # noqa: F403 - its __all__
from .group import *  # noqa: F403 - its __all__
from .info import *  # noqa: F403 - its __all__
from .memory import BOTTOM, IN_PLACE, Alloc_mem, BottomType, Free_mem, Get_address, InPlaceType, buffer, memory
from .message import *  # noqa: F403 - its __all__
from .not_covered import NotCoveredError
from .ops import *  # noqa: F403 - its __all__
from .pickling import *  # noqa: F403 - its __all__
from .point_to_point import *  # noqa: F403 - its __all__
from .requests import *  # noqa: F403 - its __all__
from .win import WIN_NULL, Win

Intracomm = Intracomm
Comm = Comm


def Init() -> None:  # noqa: N802 - mpi4py's names
    """Join the job (done at the first use of COMM_WORLD anyway)."""
    _join.init()


def Init_thread(required: int = 3) -> int:  # noqa: N802
    _join.init()
    return 3  # THREAD_MULTIPLE: rma's calls are thread-safe


def Finalize() -> None:  # noqa: N802
    _collective_worker.finish()  # (no worker may be inside a collective while the runtime ends)
    _rma.finalize()


def Is_initialized() -> bool:  # noqa: N802
    return _join.is_initialized()


def Is_finalized() -> bool:  # noqa: N802
    return _join.is_finalized() if hasattr(_join, "is_finalized") else False


def Query_thread() -> int:  # noqa: N802
    return 3


def Is_thread_main() -> bool:  # noqa: N802
    import threading

    return threading.current_thread() is threading.main_thread()


def Wtime() -> float:  # noqa: N802
    """Return seconds on the host's monotonic clock, the same clock in every rank of a host.

    CLOCK_MONOTONIC counts from the host's boot, not from the process's start, so that times the
    ranks of a host take can be compared (mpiexec's ranks do so); ranks of different hosts
    count from different boots."""
    return _time.clock_gettime(_time.CLOCK_MONOTONIC)


def Wtick() -> float:  # noqa: N802
    """Return the resolution of Wtime's clock in seconds."""
    return _time.clock_getres(_time.CLOCK_MONOTONIC)


def Get_version() -> tuple[int, int]:  # noqa: N802
    """The MPI standard version whose semantics the facade follows for what it covers."""
    return (VERSION, SUBVERSION)  # noqa: F405


def Get_library_version() -> str:  # noqa: N802
    return f"rma {_rma.__version__} (mpi4py facade)"


def get_vendor() -> tuple[str, tuple[int, int, int]]:
    parts = [int(p) for p in _rma.__version__.split(".")[:3] if p.isdigit()]
    return "rma", tuple((parts + [0, 0, 0])[:3])


def Get_processor_name() -> str:  # noqa: N802
    return _socket.gethostname()


def Pcontrol(level: int) -> None:  # noqa: N802
    pass


# mpi4py's classes of which the facade covers nothing: what stays out of rma (topologies,
# intercommunicators, MPI-IO, sessions).
NOT_COVERED_CLASSES = """
    Topocomm Cartcomm Graphcomm Distgraphcomm Intercomm File Session
"""

# mpi4py's other module-level names that the facade does not cover: MPI-IO's, dynamic processes',
# topologies', sessions', the ABI's, fault tolerance's error classes, datatype decoding's
# (combiners, type classes, darray distributions), Fortran's status indexes, MPI 4's and 4.1's
# new datatype names, and address arithmetic. The porting guide's table lists them
# (rma.compat.coverage); tests/test_compat_coverage.py checks that every name of mpi4py is
# either in MPI or here.
NOT_COVERED = """
    ERR_FILE ERR_BAD_FILE ERR_NO_SUCH_FILE ERR_FILE_EXISTS ERR_FILE_IN_USE ERR_AMODE ERR_ACCESS
    ERR_READ_ONLY ERR_NO_SPACE ERR_QUOTA ERR_IO ERR_UNSUPPORTED_DATAREP ERR_CONVERSION ERR_DUP_DATAREP
    MODE_RDONLY MODE_WRONLY MODE_RDWR MODE_CREATE MODE_EXCL MODE_DELETE_ON_CLOSE MODE_UNIQUE_OPEN
    MODE_SEQUENTIAL MODE_APPEND SEEK_SET SEEK_CUR SEEK_END DISPLACEMENT_CURRENT DISP_CUR
    MAX_DATAREP_STRING Register_datarep FILE_NULL
    ERR_SPAWN ERR_PORT ERR_SERVICE ERR_NAME MAX_PORT_NAME Open_port Close_port Publish_name
    Unpublish_name Lookup_name
    CART GRAPH DIST_GRAPH UNWEIGHTED WEIGHTS_EMPTY Compute_dims
    ERR_SESSION SESSION_NULL MAX_PSET_NAME_LEN MAX_STRINGTAG_LEN
    ERR_ABI Get_abi_version Get_abi_info Get_abi_fortran_info Get_hw_resource_info
    COMM_TYPE_HW_GUIDED COMM_TYPE_HW_UNGUIDED COMM_TYPE_RESOURCE_GUIDED
    ERR_PROC_ABORTED ERR_VALUE_TOO_LARGE ERR_REVOKED ERR_PROC_FAILED_PENDING
    TYPECLASS_LOGICAL TYPECLASS_INTEGER TYPECLASS_REAL TYPECLASS_COMPLEX
    DISTRIBUTE_NONE DISTRIBUTE_BLOCK DISTRIBUTE_CYCLIC DISTRIBUTE_DFLT_DARG
    COMBINER_NAMED COMBINER_DUP COMBINER_CONTIGUOUS COMBINER_VECTOR COMBINER_HVECTOR COMBINER_INDEXED
    COMBINER_HINDEXED COMBINER_INDEXED_BLOCK COMBINER_HINDEXED_BLOCK COMBINER_STRUCT COMBINER_SUBARRAY
    COMBINER_DARRAY COMBINER_RESIZED COMBINER_VALUE_INDEX COMBINER_F90_INTEGER COMBINER_F90_REAL
    COMBINER_F90_COMPLEX
    F_SOURCE F_TAG F_ERROR F_STATUS_SIZE
    FLOAT16_T FLOAT32_T FLOAT64_T SIGNED_SHORT SIGNED_INT SIGNED_LONG SIGNED_LONG_LONG
    SINT8_T SINT16_T SINT32_T SINT64_T
    WIN_FLAVOR MAX_LIBRARY_VERSION_STRING Aint_add Aint_diff
"""

# Names MPI has that mpi4py does not: the facade's own.
# (HOST: MPI's keyval, which mpi4py 4 left out; LB and UB: MPI-1's markers, null datatypes here.)
FACADE_ONLY = "NotCoveredError NOT_COVERED NOT_COVERED_CLASSES FACADE_ONLY HOST LB UB"


def __getattr__(name: str) -> _Any:
    raise NotCoveredError(f"rma.compat: MPI.{name} is not covered by rma's mpi4py facade (see the porting guide)")


_ = (Datatype, BOTTOM, IN_PLACE, Alloc_mem, Free_mem, Get_address, buffer, memory, COMM_NULL, WIN_NULL, Win, COMM_SELF)
_ = (COMM_WORLD, BottomType, InPlaceType)
