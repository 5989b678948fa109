"""rmarun --serve-store: only a store, for ranks started by other means (a batch system)."""

from __future__ import annotations

import argparse
import queue
import shlex
import signal

from .._job.store_server import StoreServer
from .output import say
from .signals import SignalForwarder

__all__ = ["serve_store"]


def serve_store(args: argparse.Namespace) -> int:
    """Run only a store and print the environment ranks started elsewhere need.

    Serves until every rank has connected and left (or SIGINT/SIGTERM);
    returns 0 if all ranks said bye, 1 if any died, 128+N on signal N.
    """
    events: queue.SimpleQueue = queue.SimpleQueue()

    def on_exit(rank: int, clean: bool) -> None:
        events.put(("exit", rank, clean))

    server = StoreServer(args.n, host=args.store_host, port=args.store_port, on_rank_exit=on_exit)
    try:
        server.start()
        address = server.reachable_address
        print(f"export RMA_STORE={shlex.quote(address)}")
        print(f"export RMA_SECRET={shlex.quote(server.secret)}")
        print(f"export RMA_SIZE={args.n}")
        print(
            f"# each rank also needs RMA_RANK (0..{args.n - 1}); SLURM_PROCID, PMI_RANK, "
            "OMPI_COMM_WORLD_RANK are used when RMA_RANK is unset",
            flush=True,
        )
        left: set[int] = set()
        died = False
        with SignalForwarder(events):
            while len(left) < args.n:
                kind, who, value = events.get()
                if kind == "signal":
                    say(f"got {signal.Signals(who).name}; closing the store")
                    return 128 + who
                left.add(who)
                died = died or not value
        return 1 if died else 0
    finally:
        server.close()
