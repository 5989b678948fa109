"""Job start-up time and barrier latency, per provider: `python bench/foundation.py`.

"auto" names no provider: a job on one host then loads no libfabric at all (its messages and
barriers go through shared memory); "shm" and "tcp" make every rank load libfabric and open
that provider's endpoint, as a job that spans hosts does.

Start-up: wall time of `rmarun -n N python -c "import rma; rma.init().barrier()"` (median of
several runs). Barrier: the median per-barrier time over many barriers inside one job, taking
the slowest rank of each repetition.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

BARRIER_JOB = r"""
import time, rma
comm = rma.init()
for _ in range(50):
    comm.barrier()
samples = []
for _ in range(7):
    comm.barrier()
    start = time.perf_counter()
    for _ in range({rounds}):
        comm.barrier()
    samples.append((time.perf_counter() - start) / {rounds})
slowest = [max(values) for values in zip(*comm.allgather(samples))]
if comm.rank == 0:
    print(sorted(slowest)[len(slowest) // 2])
"""


def rmarun(n: int, provider: str, code: str) -> subprocess.CompletedProcess:
    chosen = [] if provider == "auto" else ["--provider", provider]
    command = [sys.executable, "-m", "rma", "-n", str(n), *chosen, sys.executable, "-c", code]
    return subprocess.run(command, capture_output=True, text=True, timeout=300, check=True)


def startup(n: int, provider: str, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        rmarun(n, provider, "import rma; rma.init().barrier()")
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=2000)
    args = parser.parse_args()
    print("| provider | start-up 1 rank | 4 ranks | 16 ranks | barrier 2 ranks | 4 ranks |")
    print("| --- | --- | --- | --- | --- | --- |")
    for provider in ("auto", "shm", "tcp"):
        ups = [startup(n, provider, args.runs) for n in (1, 4, 16)]
        barriers = [float(rmarun(n, provider, BARRIER_JOB.format(rounds=args.rounds)).stdout) for n in (2, 4)]
        print(
            f"| {provider} | "
            + " | ".join(f"{t * 1e3:.0f} ms" for t in ups)
            + " | "
            + " | ".join(f"{b * 1e6:.1f} us" for b in barriers)
            + " |",
            flush=True,
        )


if __name__ == "__main__":
    main()
