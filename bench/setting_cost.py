"""What a setting costs: the bench's small cases with and without it, alternating, in one run.

`python bench/setting_cost.py [--setting RMA_CHECK=1] [--repetitions N] [--sizes 8,4096]` runs the
cases of bench/run.py's "rma RMA_CHECK=1" column (2 ranks, one host) without the setting and with
it, alternating, and prints each case's median time both ways and their ratio.
- RMA_CHECK=1 (the default): the checker (issue 18 aims at 3x at most on the small cases);
  `./dev.sh test` runs it once (CI prints it); bench/run.py has the same column beside mpi4py's.
- RMA_TRACE=FILE: the trace (issue 42 aims at 2x at most on small calls); the job rewrites FILE.
`--baseline PYTHON` compares builds instead: rma as installed for that interpreter (an earlier
commit) without the setting, this build with it (give `--setting` a harmless NAME=VALUE, such as
RMA_TRACE= for "this build, untraced").
A measure, not a test: it never fails on a ratio, only when a job fails.
"""

from __future__ import annotations

import argparse
import os
import statistics

from run import CHECKED_CASES, rmarun, run_job, say
from table_cells import fmt, size_text, title


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--setting", default="RMA_CHECK=1", help="NAME=VALUE to measure (default RMA_CHECK=1)")
    parser.add_argument("--baseline", metavar="PYTHON", help="the 'without' side: rma installed for PYTHON")
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--sizes", default="8", help="comma-separated sizes in bytes to print (default: 8)")
    args = parser.parse_args()
    sizes = {int(size) for size in args.sizes.split(",")}
    name, _, value = args.setting.partition("=")
    without = {key: text for key, text in os.environ.items() if key != name}
    job = rmarun(2, ["--cases", CHECKED_CASES])
    before = rmarun(2, ["--cases", CHECKED_CASES], python=args.baseline) if args.baseline else job
    values: dict[tuple[str, int, bool], list[float]] = {}
    for repetition in range(1, args.repetitions + 1):
        for checked in (False, True):  # (alternating: the machine's noise falls on both alike)
            env = {**without, name: value} if checked else without
            for result in run_job(job if checked else before, env):
                values.setdefault((result["case"], result["size"], checked), []).append(result["value"])
        say(f"{name} cost: repetition {repetition}/{args.repetitions} done")
    print(f"\n{'case':40s} {'size':>7s} {'without':>10s} {'with ' + name:>14s} {'ratio':>6s}")
    for case in CHECKED_CASES.split(","):
        for size in sorted({s for (c, s, _) in values if c == case}):
            if size not in sizes:
                continue
            plain = statistics.median(values[(case, size, False)])
            checked = statistics.median(values[(case, size, True)])
            print(
                f"{title(case):40s} {size_text(size):>7s} {fmt(case, plain):>10s} {fmt(case, checked):>14s} "
                f"{checked / plain:5.2f}x"
            )


if __name__ == "__main__":
    main()
