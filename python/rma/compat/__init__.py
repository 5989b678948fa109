"""mpi4py's names over rma: ``from rma.compat import MPI`` instead of ``from mpi4py import MPI``.

``rmarun --mpi4py -n 4 python prog.py`` runs a program that imports mpi4py unchanged: the ranks
find this facade under the name mpi4py (``rma/compat/mpi4py_shim``), and only they do.
See docs/porting.md for what the facade covers.
"""

import os as _os

# The folder that holds the facade under the name mpi4py: `rmarun --mpi4py` puts it first on
# the ranks' PYTHONPATH.
MPI4PY_SHIM = _os.path.join(_os.path.dirname(__file__), "mpi4py_shim")
