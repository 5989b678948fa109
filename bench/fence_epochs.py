"""Epoch latency with one 8 B call (fence, PSCW) and put bandwidth (1 MiB) between 2 ranks.

Run: `python bench/fence_epochs.py` (it starts its own 2-rank jobs, one per provider).
Latency is the median time of one epoch (a call and a fence) on rank 0 while rank 1 fences;
bandwidth is 64 puts of 1 MiB followed by one fence.
"""

from __future__ import annotations

import subprocess
import sys

JOB = r"""
import statistics, time
import numpy as np
import rma

comm = rma.init()
win = rma.Window.allocate(comm, 1 << 20, np.uint8)
small = np.zeros(1, np.int64)
big = np.ones(1 << 20, np.uint8)
acc = rma.Window.allocate(comm, 1, np.int64)


def epochs(window, call, rounds):
    window.fence()
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        if comm.rank == 0:
            call()
        window.fence()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def pscw_epochs(rounds):
    samples = []
    comm.barrier()
    for _ in range(rounds):
        start = time.perf_counter()
        if comm.rank == 0:
            win.start([1]); win.put(small, 1); win.complete()
        else:
            win.post([0]); win.wait()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


put = epochs(win, lambda: win.put(small, 1), 2000)
win.fence(rma.Mode.NOSUCCEED)
pscw = pscw_epochs(2000)
accumulate = epochs(acc, lambda: acc.accumulate(small, 1), 2000)
rates = []
for _ in range(5):
    win.fence()
    start = time.perf_counter()
    if comm.rank == 0:
        for _ in range(64):
            win.put(big, 1)
    win.fence()
    rates.append(64 * big.nbytes / (time.perf_counter() - start))
if comm.rank == 0:
    bandwidth = statistics.median(rates) / 1e9
    print(f"{put * 1e6:.1f} us | {accumulate * 1e6:.1f} us | {pscw * 1e6:.1f} us | {bandwidth:.2f} GB/s")
win.free(); acc.free()
"""


def main() -> None:
    print("| provider | put 8 B + fence | accumulate 8 B + fence | PSCW epoch, one 8 B put | put 1 MiB bandwidth |")
    print("| --- | --- | --- | --- | --- |")
    for provider in ("shm", "tcp"):
        out = subprocess.run(
            [sys.executable, "-m", "rma", "-n", "2", "--provider", provider, sys.executable, "-c", JOB],
            capture_output=True,
            text=True,
            timeout=600,
            check=True,
        )
        print(f"| {provider} | {out.stdout.strip()} |", flush=True)


if __name__ == "__main__":
    main()
