"""mpi4py.util under `rmarun --mpi4py`: only util.sync is provided."""
