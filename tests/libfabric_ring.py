"""A program for tests of which libfabric a rank loads: a ring of puts through libfabric (the job
must load one: RMA_PROVIDER or RMA_TRANSPORT=libfabric), then the libfabric files the rank has
mapped, as /proc/self/maps says, not as rma says."""

from __future__ import annotations

import textwrap

RING = textwrap.dedent(
    """
    import numpy as np
    import rma

    comm = rma.init()
    rank, size = comm.rank, comm.size
    win = rma.Window.allocate(comm, 4, np.int64)
    with win.fence():
        win.put(np.full(4, rank + 1, np.int64), (rank + 1) % size)
    assert (win.local == (rank - 1) % size + 1).all(), win.local
    win.free()
    with open("/proc/self/maps") as maps:
        files = sorted({line.split()[-1] for line in maps if "libfabric" in line})
    print(f"rank {rank}: mapped {files}", flush=True)
    """
)
