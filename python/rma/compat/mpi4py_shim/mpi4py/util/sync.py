"""mpi4py.util.sync under `rmarun --mpi4py`: rma.compat.util_sync by this name."""

import sys

from rma.compat import util_sync as _facade

sys.modules[__name__] = _facade
