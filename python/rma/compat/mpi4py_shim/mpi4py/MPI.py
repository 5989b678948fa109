"""mpi4py.MPI under `rmarun --mpi4py`: rma.compat.MPI by this name."""

import sys

from rma.compat import MPI as _facade

sys.modules[__name__] = _facade
