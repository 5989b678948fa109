"""What rma's mpi4py facade (rma.compat) costs per call over rma's own API, in one process.

Run by bench/run.py (or alone: `rmarun -n 1 python bench/facade_cost.py [--json]`). Both sides
call the same window, the one underneath an MPI.Win: rma's own call (`win._win.put(...)`,
byte displacements) and the facade's (`win.Put(...)`, displacements in the window's disp_unit
of 8), timed in alternating rounds of many calls each; the cost of a call is the median
facade time minus the median rma time. Comparing two separate jobs instead (bench/run.py's
"compat / rma" column) also carries the noise between runs, which is larger than this cost.
"""

from __future__ import annotations

import json
import statistics
import sys
import time

import numpy as np

import rma
from rma.compat import MPI

CALLS = 20000
ROUNDS = 15


def cases(win: MPI.Win) -> dict[str, tuple]:
    """Each call: (rma's own form, the facade's form), as functions of no arguments."""
    own = win._win
    one = np.ones(1, np.int64)
    into = np.zeros(1, np.int64)
    expected = np.zeros(1, np.int64)
    return {
        "Put (8 B)": (lambda: own.put(one, 0, 8), lambda: win.Put(one, 0, 1)),
        "Get (8 B)": (lambda: own.get(into, 0, 8), lambda: win.Get(into, 0, 1)),
        "Accumulate (SUM)": (lambda: own.accumulate(one, 0, 8), lambda: win.Accumulate(one, 0, 1)),
        "Accumulate (MAX given)": (
            lambda: own.accumulate(one, 0, 8, rma.MAX),
            lambda: win.Accumulate(one, 0, 1, MPI.MAX),
        ),
        "Accumulate (op= keyword)": (
            lambda: own.accumulate(one, 0, 8, op=rma.SUM),
            lambda: win.Accumulate(one, 0, 1, op=MPI.SUM),
        ),
        "Get_accumulate (SUM)": (
            lambda: own.get_accumulate(one, into, 0, 8),
            lambda: win.Get_accumulate(one, into, 0, 1),
        ),
        "Fetch_and_op (SUM)": (lambda: own.fetch_and_op(one, into, 0, 8), lambda: win.Fetch_and_op(one, into, 0, 1)),
        "Compare_and_swap": (
            lambda: own.compare_and_swap(one, expected, into, 0, 8),
            lambda: win.Compare_and_swap(one, expected, into, 0, 1),
        ),
        "Flush": (lambda: own.flush(0), lambda: win.Flush(0)),
        "Flush_all": (lambda: own.flush_all(), lambda: win.Flush_all()),
        "Lock + Unlock (shared)": (
            lambda: (own.lock(0, rma.LOCK_SHARED), own.unlock(0)),
            lambda: (win.Lock(0, MPI.LOCK_SHARED), win.Unlock(0)),
        ),
    }


def per_call(function) -> float:
    began = time.perf_counter_ns()
    for _ in range(CALLS):
        function()
    return (time.perf_counter_ns() - began) / CALLS / 1e3  # us


def measure() -> dict[str, dict[str, float]]:
    win = MPI.Win.Allocate(64, 8, comm=MPI.COMM_SELF)
    results = {}
    for name, (own, facade) in cases(win).items():
        in_epoch = not name.startswith("Lock")  # (the data calls and flushes run in a lock_all epoch)
        if in_epoch:
            win.Lock_all()
        own_times, facade_times = [], []
        for _ in range(ROUNDS):
            own_times.append(per_call(own))
            facade_times.append(per_call(facade))
        if in_epoch:
            win.Unlock_all()
        rma_us, compat_us = statistics.median(own_times), statistics.median(facade_times)
        results[name] = {"rma": rma_us, "compat": compat_us, "cost": compat_us - rma_us}
    win.Free()
    return results


def main() -> None:
    results = measure()
    if "--json" in sys.argv:
        print(json.dumps(results))
        return
    print(f"{'call':<24}{'rma':>10}{'facade':>10}{'cost':>10}   (us per call)")
    for name, row in results.items():
        print(f"{name:<24}{row['rma']:>10.3f}{row['compat']:>10.3f}{row['cost']:>+10.3f}")


if __name__ == "__main__":
    main()
