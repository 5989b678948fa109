"""Ranks that persist across notebook cells.

    import rma.notebook
    cluster = rma.notebook.start(4)        # 4 ranks; also enables the %%rma cell magic

    %%rma
    win = rma.Window.allocate(comm, 8, np.int64)     # runs on every rank; output grouped by rank
    print(comm.rank, win.local)

    boards = cluster.pull("win.local")     # every rank's value, as a list
    cluster.push(step=3)                   # set a variable on every rank
    cluster.run("x = comm.allgather(step)")
    cluster.stop()                         # also done when the kernel exits

Each rank keeps its own namespace, with `rma`, `np` and `comm` (its world communicator) in it.
A rank's exception shows its traceback under its rank number, and %%rma then raises
rma.notebook.RankError. Interrupting the kernel interrupts the cell on every rank
(KeyboardInterrupt in the ranks' Python code) and leaves the job running.

cluster.py holds the ranks (Cluster), worker.py is what each rank runs; this module holds the
cluster %%rma uses and the magic.
"""

from __future__ import annotations

import sys

from ..errors import RMAError
from .cluster import Cluster, RankError, RankResult

__all__ = ["Cluster", "RankError", "RankResult", "start", "current"]

_current: Cluster | None = None


def show(results: list[RankResult]) -> None:
    """Print each rank's output under its rank number, then its traceback if it raised."""
    for result in results:
        text = result.stdout + result.stderr
        if text or result.error:
            print(f"[rank {result.rank}]")
            if text:
                print(text, end="" if text.endswith("\n") else "\n")
            if result.error:
                print(result.error, end="", file=sys.stderr)


def start(n: int = 4, *, provider: str | None = None) -> Cluster:
    """Start a cluster of `n` ranks, make it the one %%rma uses, and enable %%rma."""
    global _current
    if _current is not None:
        _current.stop()
    _current = Cluster(n, provider=provider)
    _register_magic()
    return _current


def current() -> Cluster:
    """Return the cluster %%rma uses."""
    if _current is None or _current.stopped:
        raise RMAError("rma.notebook: no cluster is running; call rma.notebook.start(n)")
    return _current


def _rma_cell(line: str, cell: str) -> None:
    """%%rma: run the cell on every rank; show the output grouped by rank."""
    results = current().run(cell)
    show(results)
    if any(r.error for r in results):
        raise RankError(f"the cell raised on rank(s) {', '.join(str(r.rank) for r in results if r.error)}")


def _register_magic() -> None:
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is not None:
        shell.register_magic_function(_rma_cell, magic_kind="cell", magic_name="rma")


def load_ipython_extension(ipython) -> None:
    """`%load_ext rma.notebook` enables %%rma (start a cluster with rma.notebook.start)."""
    ipython.register_magic_function(_rma_cell, magic_kind="cell", magic_name="rma")
