"""rma side by side with mpi4py (over MPICH and over Open MPI) and a memcpy ceiling.

Run `./dev.sh bench` (or `python bench/run.py` inside the project's venv with the `bench`
extra). The first run makes two virtual environments under bench/.envs/ with mpi4py and MPICH,
and mpi4py and Open MPI, from PyPI. Then, for each repetition, it runs one job per system, one
after the other (interleaved), plus the C++ core alone, and writes to bench/results/:
results.md (the table), results.csv, latency.png and bandwidth.png.

Without Python, the C++ core (bench/cpp/core_bench.cpp) runs the small cases next to the same
cases in C over each MPI (bench/cpp/mpi_bench.c, built with that MPI's own mpicc).

`--hosts` measures across two hosts of a test bed instead (bench/across_hosts.py).
`--baseline PYTHON` adds the rma installed for that interpreter (another build), interleaved.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from mpi_envs import MPI_SYSTEMS, ensure_env
from table_cells import BANDWIDTH, SINGLE, TITLES, base, fmt, order, size_text, title

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "results"
CASES = HERE / "cases.py"
CORE = "rma C++ core"
# The mpi4py code of cases.py run unchanged on rma's mpi4py facade (rmarun --mpi4py): what the
# facade costs over rma's own API, per call, is measured in one process by bench/facade_cost.py.
COMPAT = "rma.compat"
# rma under RMA_CHECK=1, on the small cases (issue 18: the checker's cost). put_bw and get_bw are
# left out: their bursts put to (get into) the same bytes without a flush between, as OSU's do,
# which the checker rightly reports.
CHECKED = "rma RMA_CHECK=1"
# rma under RMA_TRACE, on the same small cases (issue 42: the trace's cost; at most 2x).
TRACED = "rma RMA_TRACE"
# --baseline PYTHON: rma as another build installed for that interpreter (an earlier commit,
# say), run with the same jobs, interleaved with this one's, so that a change's cost is read
# from one run on one machine: baseline / rma per case.
BASELINE = "rma baseline"
CHECKED_CASES = (
    "put,get,accumulate,lock_put_unlock,fetch_and_op,compare_and_swap,fence_empty,fence_put,pscw_put,barrier"
)
C_COLUMNS = {"mpich": "C MPICH", "openmpi": "C Open MPI"}  # the same cases in C, without Python
COMMUNICATOR_RANKS = (2, 4)
# The collective window cases again at more ranks than the machine has cores (the scaling table).
SCALING_RANKS = (4, 8)
SCALING_CASES = ["--cases", "fence_empty,win_create_free,barrier"]


def say(text: str) -> None:
    print(f"bench: {text}", flush=True)


def mpiexec(python: Path, package: str, n: int, args: list[str]) -> list[str]:
    launcher = [str(python.parent / "mpiexec"), "-n", str(n)]
    if package == "openmpi":
        launcher[1:1] = ["--oversubscribe"] + (["--allow-run-as-root"] if os.getuid() == 0 else [])
    return launcher + [str(python), str(CASES), "--backend", "mpi4py", *args]


def rmarun(n: int, args: list[str], backend: str = "rma", python: str = sys.executable) -> list[str]:
    """A job of cases.py under rmarun; backend "mpi4py" runs its mpi4py code on rma's facade.
    `python`: the interpreter whose rma runs the job (--baseline's, or this one)."""
    facade = ["--mpi4py"] if backend == "mpi4py" else []
    return [python, "-m", "rma", "-n", str(n), *facade, python, str(CASES), "--backend", backend, *args]


def run_job(command: list[str], env: dict | None = None) -> list[dict]:
    done = subprocess.run(command, capture_output=True, text=True, timeout=900, env=env)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command[:4])}... failed:\n{done.stderr[-2000:]}")
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def core_bench() -> list[dict]:
    """The C++ core without Python (bench/cpp/core_bench.cpp), built on first use."""
    build = ROOT / "build" / "bench"
    binary = build / "core_bench"
    bin_dir = Path(sys.executable).parent
    cmake = shutil.which("cmake", path=str(bin_dir)) or shutil.which("cmake")
    if cmake is None:
        say("cmake not found: skipping the C++ core column")
        return []
    if not (build / "CMakeCache.txt").exists():
        say("configuring the C++ core benchmark (once)")
        ninja = shutil.which("ninja", path=str(bin_dir))
        generator = ["-G", "Ninja", f"-DCMAKE_MAKE_PROGRAM={ninja}"] if ninja else []
        subprocess.run(
            [
                cmake,
                "-S",
                str(ROOT),
                "-B",
                str(build),
                *generator,
                "-DCMAKE_BUILD_TYPE=Release",
                "-DRMA_BUILD_PYTHON=OFF",
                "-DRMA_BUILD_BENCH=ON",
            ],
            check=True,
            capture_output=True,
        )
    # Every time: an incremental build, so the column never measures an old core.
    subprocess.run([cmake, "--build", str(build), "--target", "core_bench"], check=True, capture_output=True)
    return run_job([str(binary)])


def c_mpi_bench(python: Path, package: str) -> list[dict]:
    """The small cases in C over one MPI (bench/cpp/mpi_bench.c), built with its mpicc."""
    bin_dir = python.parent
    binary = ROOT / "build" / "bench" / f"mpi_bench_{package}"
    binary.parent.mkdir(parents=True, exist_ok=True)
    built = subprocess.run(
        [str(bin_dir / "mpicc"), "-O2", "-o", str(binary), str(HERE / "cpp" / "mpi_bench.c")],
        capture_output=True,
        text=True,
    )
    if built.returncode != 0:
        say(f"cannot build the C benchmark with {package}'s mpicc: skipping its C column")
        return []
    launcher = [str(bin_dir / "mpiexec"), "-n", "2"]
    if package == "openmpi":
        launcher[1:1] = ["--oversubscribe"] + (["--allow-run-as-root"] if os.getuid() == 0 else [])
    return run_job(launcher + [str(binary)])


def facade_cost() -> dict[str, dict[str, float]]:
    """What rma.compat costs per call over rma's own calls, in one process (bench/facade_cost.py)."""
    command = [sys.executable, "-m", "rma", "-n", "1", sys.executable, str(HERE / "facade_cost.py"), "--json"]
    return run_job(command)[0]


def facade_table(facade: dict[str, dict[str, float]]) -> str:
    lines = [
        "\n### What the mpi4py facade costs per call\n",
        "bench/facade_cost.py, one process: rma's own call and rma.compat's MPI.Win call on the same "
        "window, in alternating rounds (median us per call); the goal is at most 0.1 us.\n",
        "| call | rma | rma.compat | cost |",
        "| --- | --- | --- | --- |",
    ]
    for call, row in facade.items():
        lines.append(f"| {call} | {row['rma']:.3f} us | {row['compat']:.3f} us | {row['cost']:+.3f} us |")
    return "\n".join(lines) + "\n"


def memcpy_ceiling(sizes: list[int]) -> dict[int, float]:
    """Seconds to copy `size` bytes within this process (the best any system could do)."""
    ceiling = {}
    for size in sizes:
        src, dst = np.ones(size, np.uint8), np.zeros(size, np.uint8)
        count = max(20, min(2000, (64 << 20) // max(size, 1)))
        samples = []
        for _ in range(count):
            began = time.perf_counter()
            np.copyto(dst, src)
            samples.append(time.perf_counter() - began)
        ceiling[size] = statistics.median(samples)
    return ceiling


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repetitions", type=int, help="default: 5 (--hosts: 3)")
    parser.add_argument("--no-mpi", action="store_true", help="measure rma only")
    parser.add_argument(
        "--mpi",
        choices=sorted(MPI_SYSTEMS.values()),
        action="append",
        help="only this MPI beside rma (repeatable; default: every one, and with --hosts MPICH only)",
    )
    parser.add_argument(
        "--hosts",
        action="store_true",
        help="rma between two hosts of a namespace test bed, beside a raw TCP ceiling (as root; bench/across_hosts.py)",
    )
    parser.add_argument(
        "--baseline",
        metavar="PYTHON",
        help="also run rma as installed for this interpreter (another build), interleaved; "
        "the table gains its column and baseline / rma",
    )
    parser.add_argument(
        "--collectives",
        action="store_true",
        help="only the buffer collectives (rma, rma.compat and each MPI, at 2 and 4 ranks); "
        "writes results.md as the full run does",
    )
    args = parser.parse_args()
    if args.hosts:
        import across_hosts

        across_hosts.main(args.repetitions or 3, mpis=[] if args.no_mpi else args.mpi, baseline=args.baseline)
        return
    args.repetitions = args.repetitions or 5
    RESULTS.mkdir(exist_ok=True)

    # Each system's jobs: the 2-rank cases, the contended case, the communicator at 2 and 4 ranks,
    # and the collective window cases at 4 and 8 ranks. The second of each pair is the job's rank
    # count when its rows are told apart by it ("barrier@8"), else 0.
    def rma_jobs(python: str = sys.executable) -> list[tuple[list[str], int]]:
        return (
            [(rmarun(2, [], python=python), 0), (rmarun(4, ["--contended"], python=python), 0)]
            + [(rmarun(n, ["--communicator"], python=python), n) for n in COMMUNICATOR_RANKS]
            + [(rmarun(n, SCALING_CASES, python=python), n) for n in SCALING_RANKS]
            + [(rmarun(n, ["--collectives"], python=python), n) for n in COMMUNICATOR_RANKS]
        )

    # The facade: cases.py's mpi4py code, the window cases and the buffer collectives.
    compat_jobs = [(rmarun(2, [], "mpi4py"), 0)]
    compat_jobs += [(rmarun(n, ["--collectives"], "mpi4py"), n) for n in COMMUNICATOR_RANKS]
    systems: dict[str, list[tuple[list[str], int]]] = {
        "rma": rma_jobs(),
        COMPAT: compat_jobs,
        CHECKED: [(["env", "RMA_CHECK=1", *rmarun(2, ["--cases", CHECKED_CASES])], 0)],
        TRACED: [(["env", f"RMA_TRACE={RESULTS / 'traced.json'}", *rmarun(2, ["--cases", CHECKED_CASES])], 0)],
    }
    if args.collectives:  # only the buffer collectives' jobs
        systems = {
            "rma": [(rmarun(n, ["--collectives"]), n) for n in COMMUNICATOR_RANKS],
            COMPAT: compat_jobs[1:],
        }
    if args.baseline:
        systems[BASELINE] = rma_jobs(args.baseline)
    c_systems: dict[str, tuple[Path, str]] = {}
    if not args.no_mpi:
        for name, package in MPI_SYSTEMS.items():
            if args.mpi and package not in args.mpi:
                continue
            python = ensure_env(name, package)
            if python is not None:
                collectives = [(mpiexec(python, package, n, ["--collectives"]), n) for n in COMMUNICATOR_RANKS]
                if args.collectives:
                    systems[name] = collectives
                    continue
                systems[name] = [
                    (mpiexec(python, package, 2, []), 0),
                    (mpiexec(python, package, 4, ["--contended"]), 0),
                ]
                systems[name] += [(mpiexec(python, package, n, ["--communicator"]), n) for n in COMMUNICATOR_RANKS]
                systems[name] += [(mpiexec(python, package, n, SCALING_CASES), n) for n in SCALING_RANKS]
                systems[name] += collectives
                c_systems[C_COLUMNS[package]] = (python, package)

    values: dict[tuple[str, int, str], list[float]] = {}
    began = time.monotonic()
    for repetition in range(1, args.repetitions + 1):
        for name, jobs in systems.items():
            started = time.monotonic()
            results = []
            for job, ranks in jobs:
                for result in run_job(job):
                    if ranks:  # one row per rank count
                        result["case"] = f"{result['case']}@{ranks}"
                    results.append(result)
            for result in results:
                values.setdefault((result["case"], result["size"], name), []).append(result["value"])
            say(
                f"repetition {repetition}/{args.repetitions}: {name} ({len(results)} results, "
                f"{time.monotonic() - started:.1f} s; {time.monotonic() - began:.0f} s so far)"
            )
    if not args.collectives:
        for result in core_bench():
            values.setdefault((result["case"], result["size"], CORE), []).append(result["value"])
    for column, (python, package) in c_systems.items():
        for result in c_mpi_bench(python, package):
            values.setdefault((result["case"], result["size"], column), []).append(result["value"])
    facade = facade_cost() if not args.collectives else {}
    sizes = sorted({size for (_, size, _) in values})
    ceiling = memcpy_ceiling(sizes)
    write_results(values, ceiling, list(systems), facade)
    say(f"done in {time.monotonic() - began:.0f} s: {RESULTS}/results.md, results.csv, latency.png, bandwidth.png")


def write_results(values, ceiling, names, facade) -> None:
    rows = []
    mpis = [n for n in names if n not in ("rma", COMPAT, CHECKED, TRACED, BASELINE)]
    cases = sorted({case for (case, _, _) in values}, key=order)
    for case in cases:
        for size in sorted({s for (c, s, _) in values if c == case}):
            row = {"case": case, "size": size}
            for name in names + WITHOUT_PYTHON:
                samples = values.get((case, size, name))
                if samples:
                    row[name] = statistics.median(samples)
                    row[name + " min"], row[name + " max"] = min(samples), max(samples)
            higher_better = case in BANDWIDTH
            if case in ("put", "get", "put_bw", "get_bw", "accumulate"):
                row["memcpy"] = ceiling[size] if not higher_better else size / ceiling[size]
            best = [row[m] for m in mpis if m in row]
            if best and "rma" in row:
                reference = max(best) if higher_better else min(best)
                row["rma / best mpi4py"] = row["rma"] / reference
            if COMPAT in row and "rma" in row:
                row["compat / rma"] = row[COMPAT] / row["rma"]
            if best and COMPAT in row:
                reference = max(best) if higher_better else min(best)
                row["compat / best mpi4py"] = row[COMPAT] / reference
            if CHECKED in row and "rma" in row:
                row["checked / rma"] = row[CHECKED] / row["rma"]
            if TRACED in row and "rma" in row:
                row["traced / rma"] = row[TRACED] / row["rma"]
            if BASELINE in row and "rma" in row:
                # Above 1: this build is faster (latency) or slower (bandwidth) than the baseline.
                row["baseline / rma"] = row[BASELINE] / row["rma"]
            c_best = [row[c] for c in C_COLUMNS.values() if c in row]
            if c_best and CORE in row:
                row["core / best C MPI"] = row[CORE] / min(c_best)
            rows.append(row)
    columns = (
        ["case", "size"]
        + [c for n in names + WITHOUT_PYTHON for c in (n, n + " min", n + " max")]
        + ["memcpy", "rma / best mpi4py", "compat / best mpi4py", "compat / rma", "checked / rma", "traced / rma"]
        + ["baseline / rma", "core / best C MPI"]
    )
    with open(RESULTS / "results.csv", "w", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=columns, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    with open(RESULTS / "results.md", "w") as out:
        out.write(markdown_table(rows, names, mpis))
        if facade:  # (not measured by a --collectives run)
            out.write(facade_table(facade))
    plot(rows, names)


def markdown_table(rows, names, mpis) -> str:
    ratios = ["rma / best mpi4py", "compat / best mpi4py", "compat / rma", "checked / rma", "traced / rma"]
    ratios += ["baseline / rma"] if BASELINE in names else []
    header = ["case", "size"] + names + ["memcpy", *ratios] + WITHOUT_PYTHON + ["core / best C MPI"]
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    for row in rows:
        cells = [title(row["case"]), size_text(row["size"]) if base(row["case"]) not in SINGLE else "8 B"]
        for name in names:
            value = row.get(name)
            spread = (
                f" ({fmt(row['case'], row[name + ' min'])}-{fmt(row['case'], row[name + ' max'])})"
                if value is not None
                else ""
            )
            cells.append(fmt(row["case"], value) + spread if value is not None else "")
        cells.append(fmt(row["case"], row.get("memcpy")))
        for key in ratios:
            ratio = row.get(key)
            cells.append(f"{ratio:.2f}" if ratio is not None else "")
        for name in WITHOUT_PYTHON:
            cells.append(fmt(row["case"], row.get(name)))
        ratio = row.get("core / best C MPI")
        cells.append(f"{ratio:.2f}" if ratio is not None else "")
        lines.append("| " + " | ".join(cells) + " |")
    notes = (
        "\nMedian of the repetitions, (min-max) across them. Latency: lower is better, and a ratio "
        "below 1 means rma is faster than the best mpi4py; bandwidth and throughput: higher is "
        "better, and a ratio above 1 means rma is faster. memcpy: one copy of the same size in "
        "one process. rma.compat: cases.py's mpi4py code unchanged on rma's mpi4py facade "
        "(rmarun --mpi4py); compat / rma is what the facade costs over rma's own calls, and "
        "compat / best mpi4py compares it with mpi4py over the best MPI. "
        f"{CHECKED}: the small cases under the conflict checker; checked / rma is its cost. "
        f"{TRACED}: the same cases recorded by RMA_TRACE; traced / rma is its cost. "
        f"{BASELINE} (--baseline): another build of rma; baseline / rma above 1 means this build's "
        "latency is lower. The last "
        "columns run without Python: rma's C++ core and the same cases in C "
        "over each MPI (one run each, median of 2000 operations).\n"
    )
    return "\n".join(lines) + "\n" + notes


WITHOUT_PYTHON = [CORE, *C_COLUMNS.values()]


def plot(rows, names) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        say("matplotlib is missing (pip install -e '.[bench]'): no plots")
        return
    for filename, cases, ylabel in (
        ("latency.png", ["put", "get", "accumulate", "lock_put_unlock"], "seconds per operation"),
        ("bandwidth.png", ["put_bw", "get_bw"], "bytes per second"),
    ):
        figure, axes = plt.subplots(1, len(cases), figsize=(5 * len(cases), 4), squeeze=False)
        for axis, case in zip(axes[0], cases):
            chosen = [r for r in rows if r["case"] == case]
            for name in names + (["memcpy"] if case in ("put", "get", "put_bw", "get_bw") else []):
                points = [(r["size"], r[name]) for r in chosen if r.get(name) is not None]
                if points:
                    axis.plot(*zip(*points), marker="o", label=name)
            axis.set_xscale("log", base=2)
            axis.set_yscale("log")
            axis.set_title(TITLES[case], fontsize=9)
            axis.set_xlabel("message size (bytes)")
            axis.set_ylabel(ylabel)
            axis.legend(fontsize=7)
        figure.tight_layout()
        figure.savefig(RESULTS / filename, dpi=110)
        plt.close(figure)


if __name__ == "__main__":
    main()
