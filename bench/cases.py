"""One benchmark job: every case, every size, with one backend. Started by bench/run.py.

    rmarun -n 2 python bench/cases.py --backend rma
    mpiexec -n 2 python bench/cases.py --backend mpi4py

Cases follow the OSU one-sided micro-benchmarks (osu_put_latency, osu_get_bw...): rank 0 is the
origin, rank size // 2 the target (rank 1 of 2; with 2 ranks on each of two hosts, ranks 0 1 |
2 3, the first rank of the other host); each case prints one JSON line per size with the median
time of one operation (latency cases) or the bytes per second (bandwidth cases), and the
seconds the case took. Rank 0 prints.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

import numpy as np

SIZES = [8, 64, 512, 4096, 32768, 65536, 262144, 1048576, 2097152, 16777216]
LATENCY_CASES = ["put", "get", "accumulate", "lock_put_unlock"]
SINGLE_CASES = [
    "fetch_and_op",
    "compare_and_swap",
    "fence_empty",
    "fence_put",
    "pscw_put",
    "win_create_free",
    "barrier",
    "wait_until_wake",
]
BANDWIDTH_CASES = ["put_bw", "get_bw"]
WINDOW = 64
# The communicator's calls, on 4 ranks (--communicator); Allreduce of float64 arrays by size.
COMMUNICATOR_CASES = [
    "comm_barrier",
    "comm_bcast",
    "comm_allreduce",
    "comm_scatter",
    "comm_alltoall",
    "comm_sendrecv",
    "comm_isend_irecv",
    "comm_split_type",
]
ARRAY_SIZES = [8, 4096, 65536, 1048576]
# The buffer collectives in mpi4py's spelling, on 2 and 4 ranks (--collectives), float64 arrays
# by size: mpi4py over each MPI, and the same code on rma's facade (rmarun --mpi4py); rma's own
# API where it has the call (Bcast, Allreduce). With them, the buffer point-to-point exchange
# of a ring (Sendrecv to the right, from the left), which rma's own API has for objects only.
COLLECTIVE_CASES = ["coll_Bcast", "coll_Gather", "coll_Allreduce", "coll_Iallreduce", "coll_Sendrecv"]
COLLECTIVE_SIZES = [8, 1048576]


def iterations(size: int) -> int:
    """Fewer repetitions for large messages, so that a job stays short."""
    return max(20, min(1000, (8 << 20) // max(size, 1) // 4))


class SameSpelling:
    """The communicator calls that rma and mpi4py spell alike (self.comm is either's)."""

    def bcast(self, value):
        return self.comm.bcast(value)

    def allreduce(self, value):
        return self.comm.allreduce(value)

    def Allreduce(self, data, result):  # noqa: N802
        self.comm.Allreduce(data, result)

    def scatter(self, values):
        return self.comm.scatter(values)

    def alltoall(self, values):
        return self.comm.alltoall(values)

    def sendrecv(self, value, dest, source):
        return self.comm.sendrecv(value, dest, source=source)

    def Bcast(self, data):  # noqa: N802
        self.comm.Bcast(data, 0)


class Rma(SameSpelling):
    """The cases' calls with rma."""

    def __init__(self) -> None:
        import rma

        self.rma = rma
        self.comm = rma.init()
        self.rank, self.size = self.comm.rank, self.comm.size

    def allocate(self, nbytes: int):
        return self.rma.Window.allocate(self.comm, nbytes, np.uint8)

    def barrier(self) -> None:
        self.comm.barrier()

    def lock_all(self, win):
        win.lock_all()

    def unlock_all(self, win):
        win.unlock_all()

    def lock(self, win, rank):
        win.lock(rank, self.rma.LOCK_EXCLUSIVE)

    def unlock(self, win, rank):
        win.unlock(rank)

    def put(self, win, data, rank):
        win.put(data, rank)

    def get(self, win, out, rank):
        win.get(out, rank)

    def accumulate(self, win, data, rank):
        win.accumulate(data, rank, op=self.rma.SUM)

    def fetch_and_op(self, win, value, result, rank):
        win.fetch_and_op(value, result, rank, op=self.rma.SUM)

    def compare_and_swap(self, win, value, compare, result, rank):
        win.compare_and_swap(value, compare, result, rank)

    def flush(self, win, rank):
        win.flush(rank)

    def fence(self, win):
        win.fence()

    def post(self, win, ranks):
        win.post(ranks)

    def start(self, win, ranks):
        win.start(ranks)

    def complete(self, win):
        win.complete()

    def wait(self, win):
        win.wait()

    def free(self, win):
        win.free()

    def wait_value(self, win, value: int) -> None:
        """Block until this rank's window byte 0 is `value` (rma sleeps on its bell meanwhile)."""
        win.wait_until(0, "==", value, timeout=30)

    def isend_irecv(self, value, dest, source):
        receive = self.comm.irecv(source)
        self.comm.isend(value, dest).wait()
        return receive.wait()

    def split_type(self):
        self.comm.split_type("host")


class Mpi4py(SameSpelling):
    """The same calls with mpi4py."""

    def __init__(self) -> None:
        from mpi4py import MPI

        self.MPI = MPI
        self.comm = MPI.COMM_WORLD
        self.rank, self.size = self.comm.Get_rank(), self.comm.Get_size()

    def allocate(self, nbytes: int):
        return self.MPI.Win.Allocate(nbytes, 1, comm=self.comm)

    def barrier(self) -> None:
        self.comm.Barrier()

    def lock_all(self, win):
        win.Lock_all()

    def unlock_all(self, win):
        win.Unlock_all()

    def lock(self, win, rank):
        win.Lock(rank, self.MPI.LOCK_EXCLUSIVE)

    def unlock(self, win, rank):
        win.Unlock(rank)

    def put(self, win, data, rank):
        win.Put(data, rank)

    def get(self, win, out, rank):
        win.Get(out, rank)

    def accumulate(self, win, data, rank):
        win.Accumulate(data, rank, op=self.MPI.SUM)

    def fetch_and_op(self, win, value, result, rank):
        win.Fetch_and_op(value, result, rank, op=self.MPI.SUM)

    def compare_and_swap(self, win, value, compare, result, rank):
        win.Compare_and_swap(value, compare, result, rank)

    def flush(self, win, rank):
        win.Flush(rank)

    def fence(self, win):
        win.Fence()

    def post(self, win, ranks):
        win.Post(self.comm.Get_group().Incl(ranks))

    def start(self, win, ranks):
        win.Start(self.comm.Get_group().Incl(ranks))

    def complete(self, win):
        win.Complete()

    def wait(self, win):
        win.Wait()

    def free(self, win):
        win.Free()

    def wait_value(self, win, value: int) -> None:
        """Block until this rank's window byte 0 is `value`: MPI has no such call, so the usual
        idiom, polling the memory with Win.Sync in a passive epoch (a core busy meanwhile)."""
        memory = np.frombuffer(win.tomemory(), np.uint8)
        win.Lock_all()
        while memory[0] != value:
            win.Sync()
        win.Unlock_all()

    def isend_irecv(self, value, dest, source):
        receive = self.comm.irecv(source=source)
        self.comm.isend(value, dest).wait()
        return receive.wait()

    def split_type(self):
        self.comm.Split_type(self.MPI.COMM_TYPE_SHARED).Free()

    def Gather(self, data, result):  # noqa: N802
        self.comm.Gather(data, result, 0)

    def Iallreduce(self, data, result):  # noqa: N802
        self.comm.Iallreduce(data, result).Wait()

    def Sendrecv(self, data, result):  # noqa: N802
        right, left = (self.rank + 1) % self.size, (self.rank - 1) % self.size
        self.comm.Sendrecv(data, right, 0, result, left, 0)


def timed(step, count: int) -> float:
    """Median seconds of one step, over `count` steps."""
    samples = []
    for _ in range(count):
        began = time.perf_counter()
        step()
        samples.append(time.perf_counter() - began)
    return statistics.median(samples)


def run_case(b, case: str, size: int) -> float | None:
    """Return the case's figure on rank 0 (seconds per op, or bytes per second), None elsewhere."""
    count = iterations(size)
    origin, peer = b.rank == 0, b.peer
    result = None
    if case in LATENCY_CASES or case in BANDWIDTH_CASES:
        win = b.allocate(size * (WINDOW if case.endswith("_bw") else 1))
        data = np.ones(size, np.uint8) if case != "accumulate" else np.ones(size // 8, np.int64)
        b.barrier()
        if origin:
            if case == "lock_put_unlock":

                def step():
                    b.lock(win, peer)
                    b.put(win, data, peer)
                    b.unlock(win, peer)

                result = timed(step, count)
            else:
                b.lock_all(win)
                if case == "put":
                    result = timed(lambda: (b.put(win, data, peer), b.flush(win, peer)), count)
                elif case == "get":
                    result = timed(lambda: (b.get(win, data, peer), b.flush(win, peer)), count)
                elif case == "accumulate":
                    result = timed(lambda: (b.accumulate(win, data, peer), b.flush(win, peer)), count)
                else:  # bandwidth: WINDOW operations, then one flush
                    call = b.put if case == "put_bw" else b.get

                    def burst():
                        for _ in range(WINDOW):
                            call(win, data, peer)
                        b.flush(win, peer)

                    result = size * WINDOW / timed(burst, max(5, count // WINDOW))
                b.unlock_all(win)
        b.barrier()
        b.free(win)
        return result
    win = b.allocate(64)
    value, compare, fetched = np.ones(1, np.int64), np.zeros(1, np.int64), np.zeros(1, np.int64)
    b.barrier()
    if case in ("fetch_and_op", "compare_and_swap"):
        if origin:
            b.lock_all(win)
            if case == "fetch_and_op":
                result = timed(lambda: (b.fetch_and_op(win, value, fetched, peer), b.flush(win, peer)), 1000)
            else:
                result = timed(
                    lambda: (b.compare_and_swap(win, value, compare, fetched, peer), b.flush(win, peer)), 1000
                )
            b.unlock_all(win)
    elif case == "fence_empty":
        b.fence(win)
        result = timed(lambda: b.fence(win), 1000)
    elif case == "fence_put":
        b.fence(win)
        result = timed(lambda: (b.put(win, value, peer) if origin else None, b.fence(win)), 1000)
    elif case == "pscw_put":

        def epoch():
            if origin:
                b.start(win, [peer])
                b.put(win, value, peer)
                b.complete(win)
            elif b.rank == peer:
                b.post(win, [0])
                b.wait(win)

        result = timed(epoch, 1000)
    elif case == "wait_until_wake":
        result = wait_until_wake(b, win)
    elif case == "win_create_free":
        result = timed(lambda: b.free(b.allocate(4096)), 200)
    elif case == "barrier":
        result = timed(b.barrier, 2000)
    b.barrier()
    b.free(win)
    return result if origin else None


def wait_until_wake(b, win, count: int = 200) -> float | None:
    """Median seconds from rank 0's put (then flush) to the peer to the peer seeing the value in
    a wait: the peer is idle in it by then (2 ms later), as a worker waiting for work."""
    peer = b.peer
    delays = []
    for step in range(count):
        value = step % 250 + 1
        b.barrier()
        if b.rank == 0:
            time.sleep(0.002)
            b.lock_all(win)  # (shared: the polling target holds a shared lock of its own)
            b.put(win, np.full(1, value, np.uint8), peer)
            sent = time.perf_counter()
            b.flush(win, peer)
            b.unlock_all(win)
        elif b.rank == peer:
            b.wait_value(win, value)
            seen = time.perf_counter()
        sent = b.bcast(sent if b.rank == 0 else None)
        if b.rank == peer:
            delays.append(seen - sent)  # (one clock for both: CLOCK_MONOTONIC)
    # The peer's median reaches rank 0 as a sum with rank 0's nothing.
    return b.allreduce(statistics.median(delays) if b.rank == peer else 0.0) if b.size > 1 else None


def communicator_case(b, case: str) -> float | None:
    """Seconds per call of one communicator case (median over many), on rank 0."""
    right, left = (b.rank + 1) % b.size, (b.rank - 1) % b.size
    steps = {
        "comm_barrier": b.barrier,
        "comm_bcast": lambda: b.bcast(7 if b.rank == 0 else None),
        "comm_allreduce": lambda: b.allreduce(b.rank),
        "comm_scatter": lambda: b.scatter(list(range(b.size)) if b.rank == 0 else None),
        "comm_alltoall": lambda: b.alltoall(list(range(b.size))),
        "comm_sendrecv": lambda: b.sendrecv(b.rank, right, left),
        "comm_isend_irecv": lambda: b.isend_irecv(b.rank, right, left),
        "comm_split_type": b.split_type,
    }
    b.barrier()
    result = timed(steps[case], 200 if case == "comm_split_type" else 2000)
    b.barrier()
    return result if b.rank == 0 else None


def array_allreduce(b, size: int) -> float | None:
    """Seconds per Allreduce (SUM) of `size` bytes of float64, on rank 0."""
    data, result = np.ones(size // 8), np.zeros(size // 8)
    b.barrier()
    elapsed = timed(lambda: b.Allreduce(data, result), iterations(size))
    b.barrier()
    return elapsed if b.rank == 0 else None


def collective_case(b, case: str, size: int) -> float | None:
    """Seconds per call of one buffer collective of `size` bytes of float64 (root 0), on rank
    0; None where the backend has no such call (rma's own API has no Gather of arrays)."""
    call = getattr(b, case.removeprefix("coll_"), None)
    if call is None:
        return None
    data = np.ones(size // 8)
    if case == "coll_Gather":
        result = np.zeros(size // 8 * b.size) if b.rank == 0 else None
        step = lambda: call(data, result)  # noqa: E731
    elif case == "coll_Bcast":
        step = lambda: call(data)  # noqa: E731
    else:
        result = np.zeros(size // 8)
        step = lambda: call(data, result)  # noqa: E731
    b.barrier()
    elapsed = timed(step, iterations(size))
    b.barrier()
    return elapsed if b.rank == 0 else None


def contended_fetch_and_op(b) -> float | None:
    """Operations per second when every rank hammers one counter on rank 0 (4 ranks)."""
    win = b.allocate(64)
    value, fetched = np.ones(1, np.int64), np.zeros(1, np.int64)
    b.barrier()
    b.lock_all(win)
    began = time.perf_counter()
    for _ in range(500):
        b.fetch_and_op(win, value, fetched, 0)
        b.flush(win, 0)
    b.unlock_all(win)
    b.barrier()
    rate = 500 * b.size / (time.perf_counter() - began)
    b.free(win)
    return rate if b.rank == 0 else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--backend", choices=["rma", "mpi4py"], required=True)
    parser.add_argument("--cases", default="all")
    parser.add_argument("--contended", action="store_true", help="only the contended fetch_and_op case")
    parser.add_argument("--communicator", action="store_true", help="only the communicator's cases")
    parser.add_argument("--collectives", action="store_true", help="only the buffer collectives' cases")
    parser.add_argument("--sizes", help="the sizes of the latency and bandwidth cases (default: all of SIZES)")
    args = parser.parse_args()
    b = Rma() if args.backend == "rma" else Mpi4py()
    b.peer = b.size // 2
    if args.collectives:
        for case in COLLECTIVE_CASES:
            for size in COLLECTIVE_SIZES:
                value = collective_case(b, case, size)
                if b.rank == 0 and value is not None:
                    print(json.dumps({"case": case, "size": size, "value": value}), flush=True)
        return
    if args.communicator:
        for case in COMMUNICATOR_CASES:
            value = communicator_case(b, case)
            if b.rank == 0:
                print(json.dumps({"case": case, "size": 8, "value": value}), flush=True)
        for size in ARRAY_SIZES:
            value = array_allreduce(b, size)
            if b.rank == 0:
                print(json.dumps({"case": "comm_Allreduce", "size": size, "value": value}), flush=True)
        return
    if args.contended:
        rate = contended_fetch_and_op(b)
        if b.rank == 0:
            print(json.dumps({"case": "contended_fetch_and_op", "size": 8, "value": rate}), flush=True)
        return
    chosen = None if args.cases == "all" else set(args.cases.split(","))
    sizes = [int(size) for size in args.sizes.split(",")] if args.sizes else SIZES
    # Unmeasured, a first round trip: connections and the target's first wake-up are set-up,
    # not the first case's latency.
    run_case(b, "put", 8)
    for case in LATENCY_CASES + BANDWIDTH_CASES + SINGLE_CASES:
        if chosen is not None and case not in chosen:
            continue
        for size in sizes if case in LATENCY_CASES + BANDWIDTH_CASES else [8]:
            began = time.perf_counter()
            value = run_case(b, case, size)
            if b.rank == 0:
                seconds = round(time.perf_counter() - began, 3)
                print(json.dumps({"case": case, "size": size, "value": value, "seconds": seconds}), flush=True)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
