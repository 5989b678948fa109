"""Passive-target latencies (8 B, 2 ranks) and the contended rma.sync.Counter rate (4 ranks).

Run: `python bench/passive_target.py` (it starts its own jobs, one per provider). Rank 0 is the
origin, rank 1 the target, which sleeps in Python meanwhile (truly passive).
"""

from __future__ import annotations

import subprocess
import sys

LATENCY = r"""
import statistics, time
import numpy as np
import rma

comm = rma.init()
win = rma.Window.allocate(comm, 8, np.int64)
value, fetched = np.ones(1, np.int64), np.zeros(1, np.int64)
rounds = 2000


def median(step):
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        step()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples) * 1e6


def lock_put_unlock():
    win.lock(1); win.put(value, 1); win.unlock(1)


if comm.rank == 0:
    a = median(lock_put_unlock)
    win.lock_all()
    b = median(lambda: (win.put(value, 1), win.flush(1)))
    c = median(lambda: (win.fetch_and_op(1, fetched, 1), win.flush(1)))
    win.unlock_all()
    print(f"{a:.1f} us | {b:.1f} us | {c:.1f} us")
comm.barrier()
win.free()
"""

COUNTER = r"""
import time, rma
comm = rma.init()
counter = rma.sync.Counter(comm)
comm.barrier()
start = time.perf_counter()
for _ in range(500):
    counter.next()
comm.barrier()
elapsed = time.perf_counter() - start
if comm.rank == 0:
    print(f"{500 * comm.size / elapsed:,.0f} tickets/s")
counter.free()
"""


def run(n: int, provider: str, code: str) -> str:
    command = [sys.executable, "-m", "rma", "-n", str(n), "--provider", provider, sys.executable, "-c", code]
    return subprocess.run(command, capture_output=True, text=True, timeout=600, check=True).stdout.strip()


def main() -> None:
    print("| provider | lock + put + unlock | put + flush | fetch_and_op + flush | Counter, 4 ranks contending |")
    print("| --- | --- | --- | --- | --- |")
    for provider in ("shm", "tcp"):
        print(f"| {provider} | {run(2, provider, LATENCY)} | {run(4, provider, COUNTER)} |", flush=True)


if __name__ == "__main__":
    main()
