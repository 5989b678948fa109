"""mpi4py, as rma's facade: only on the path of ranks that `rmarun --mpi4py` starts.

`from mpi4py import MPI` gives rma.compat.MPI. Nothing else of mpi4py is here but util.sync.
"""

__version__ = "4.1.2"  # the mpi4py whose API the facade follows


def get_include() -> str:
    raise NotImplementedError("rma.compat: mpi4py.get_include: the facade has no C API")


def get_config() -> dict:
    return {}


class _Rc:
    """mpi4py.rc: initialization options; rma takes none of them, so they are kept and ignored."""

    initialize = True
    threads = True
    thread_level = "multiple"
    finalize = None
    fast_reduce = True
    recv_mprobe = True
    irecv_bufsz = 32768
    errors = "exception"

    def __call__(self, **kwargs):
        for key, value in kwargs.items():
            setattr(self, key, value)


rc = _Rc()
