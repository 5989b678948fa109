"""What RMA_CHECK=1 costs: the bench's checked cases, with and without the checker, in one run.

`python bench/checker_cost.py [--repetitions N] [--sizes 8,4096]` runs the cases of bench/run.py's
"rma RMA_CHECK=1" column (2 ranks, one host) unchecked and checked, alternating, and prints
each case's median time both ways and their ratio (issue 18 aims at 3x at most on the small
cases). `./dev.sh test` runs it once (CI prints it); bench/run.py has the same column beside
mpi4py's. A measure, not a test: it never fails on a ratio, only when a job fails.
"""

from __future__ import annotations

import argparse
import os
import statistics

from run import CHECKED_CASES, rmarun, run_job, say
from table_cells import fmt, size_text, title


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--sizes", default="8", help="comma-separated sizes in bytes to print (default: 8)")
    args = parser.parse_args()
    sizes = {int(size) for size in args.sizes.split(",")}
    job = rmarun(2, ["--cases", CHECKED_CASES])
    values: dict[tuple[str, int, bool], list[float]] = {}
    for repetition in range(1, args.repetitions + 1):
        for checked in (False, True):  # (alternating: the machine's noise falls on both alike)
            env = {**os.environ, "RMA_CHECK": "1" if checked else "0"}
            for result in run_job(job, env):
                values.setdefault((result["case"], result["size"], checked), []).append(result["value"])
        say(f"checker cost: repetition {repetition}/{args.repetitions} done")
    print(f"\n{'case':40s} {'size':>7s} {'unchecked':>10s} {'RMA_CHECK=1':>12s} {'ratio':>6s}")
    for case in CHECKED_CASES.split(","):
        for size in sorted({s for (c, s, _) in values if c == case}):
            if size not in sizes:
                continue
            plain = statistics.median(values[(case, size, False)])
            checked = statistics.median(values[(case, size, True)])
            print(
                f"{title(case):40s} {size_text(size):>7s} {fmt(case, plain):>10s} {fmt(case, checked):>12s} "
                f"{checked / plain:5.2f}x"
            )


if __name__ == "__main__":
    main()
