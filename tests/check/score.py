"""Score the RMA_CHECK conflict checker against the labelled programs in programs/.

Every program's docstring starts with "racy: <rule>: ..." or "safe: <rule>: ...". This
script runs each program at each rank count with RMA_CHECK=1 and compares what the checker
said with the label:

  racy run, exit status non-zero and "ConflictError" on stderr  -> true positive (TP)
  racy run, anything else                                     -> false negative (FN)
  safe run, "ConflictError" on stderr                         -> false positive (FP)
  safe run, non-zero exit (or timeout) without ConflictError  -> failed (FAIL)
  safe run, exit status 0                                     -> true negative (TN)

A failed safe run is neither a TN nor an FP: the program broke for a reason other than the
checker's verdict, which is a bug to look at, not a score. It still counts against accuracy.

  python tests/check/score.py                    # score at 2 and 3 ranks
  python tests/check/score.py --ranks 2 -k fence # a subset
  python tests/check/score.py --plain            # without RMA_CHECK: list programs that fail

The exit status is 0 unless --require-precision / --require-recall are given and not met
(or, with --plain, some program failed: every program must run cleanly without the checker).
"""

from __future__ import annotations

import argparse
import ast
import os
import re
import signal
import subprocess
import sys
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

PROGRAMS = Path(__file__).resolve().parent / "programs"
RULES = (
    "put-put",
    "put-get",
    "put-acc",
    "get-acc",
    "acc-acc",
    "local",
    "origin",
    "result",
    "read",
    "buffer",
    "misaligned",
    "sync",
)
LABEL = re.compile(r"^(racy|safe): (" + "|".join(RULES) + r"): \S.*$")
MARKER = "ConflictError"


@dataclass(frozen=True)
class Program:
    path: Path
    verdict: str  # "racy" or "safe"
    rule: str

    @property
    def name(self) -> str:
        return self.path.name


@dataclass(frozen=True)
class Run:
    program: Program
    ranks: int
    returncode: int | None  # None: killed after the timeout
    stderr: str

    @property
    def conflict_reported(self) -> bool:
        return MARKER in self.stderr

    @property
    def failed(self) -> bool:
        return self.returncode != 0

    @property
    def outcome(self) -> str:
        """Classify this run as TP, FN, FP, TN or FAIL (see the module docstring)."""
        if self.program.verdict == "racy":
            # Both conditions: a ConflictError that was caught and the rank went on is no
            # detection, and a crash for another reason is no detection either.
            return "TP" if self.failed and self.conflict_reported else "FN"
        if self.conflict_reported:
            return "FP"
        return "FAIL" if self.failed else "TN"

    def last_error_line(self) -> str:
        """The most telling stderr line: the last one naming an exception, else the last one."""
        lines = [line.strip() for line in self.stderr.splitlines() if line.strip()]
        if self.returncode is None:
            # A hang: the launcher's hang report (RMA_HANG_REPORT) says where ranks stood.
            return "timeout" + (f"; last stderr line: {lines[-1][:160]}" if lines else "")
        errors = [line for line in lines if "Error" in line or "Exception" in line]
        return (errors or lines or [f"exit status {self.returncode}, no stderr"])[-1][:160]


def read_label(path: Path) -> Program:
    """Parse the first docstring line of a program; a bad label is a bug in the suite."""
    docstring = ast.get_docstring(ast.parse(path.read_text(), str(path))) or ""
    first = docstring.splitlines()[0] if docstring else ""
    match = LABEL.match(first)
    if not match:
        raise SystemExit(f"{path}: the docstring must start with 'racy|safe: <rule>: <text>', got {first!r}")
    return Program(path, match.group(1), match.group(2))


def discover(substring: str | None) -> list[Program]:
    paths = sorted(PROGRAMS.glob("*.py"))
    if substring:
        paths = [p for p in paths if substring in p.name]
    return [read_label(p) for p in paths]


def environment(checked: bool) -> dict[str, str]:
    env = dict(os.environ)
    # Never inherit a checker setting from the caller: the mode decides.
    env.pop("RMA_CHECK", None)
    if checked:
        env["RMA_CHECK"] = "1"
    return env


def run_one(program: Program, ranks: int, env: dict[str, str], timeout: float) -> Run:
    """Run one program under the launcher; on timeout kill the whole job, not just the launcher."""
    command = [sys.executable, "-m", "rma", "-n", str(ranks), str(program.path)]
    # A session of its own, so that a hung job (launcher and ranks) can be killed as a group
    # without touching anything else.
    proc = subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        _, stderr = proc.communicate(timeout=timeout)
        return Run(program, ranks, proc.returncode, stderr)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        _, stderr = proc.communicate()
        return Run(program, ranks, None, stderr)


def run_all(programs: list[Program], ranks: list[int], checked: bool, jobs: int, timeout: float) -> list[Run]:
    env = environment(checked)
    work = [(program, n) for program in programs for n in ranks]
    # Threads are enough: each one only waits on a child process.
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        return list(pool.map(lambda item: run_one(item[0], item[1], env, timeout), work))


def ratio(numerator: int, denominator: int) -> float | None:
    return numerator / denominator if denominator else None


def percent(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


def metrics(runs: list[Run]) -> dict[str, float | None]:
    counts = Counter(run.outcome for run in runs)
    tp, fp, tn, fn = counts["TP"], counts["FP"], counts["TN"], counts["FN"]
    return {
        "precision": ratio(tp, tp + fp),
        "recall": ratio(tp, tp + fn),
        "accuracy": ratio(tp + tn, len(runs)),  # FAIL runs count as wrong
    }


def print_table(programs: list[Program], ranks: list[int], runs: list[Run]) -> None:
    by_key = {(run.program.path, run.ranks): run for run in runs}
    width = max(len(p.name) for p in programs)
    label_width = max(len(p.verdict + " " + p.rule) for p in programs)
    print(f"{'program':<{width}}  {'label':<{label_width}}" + "".join(f"  n={n:<4}" for n in ranks))
    for program in programs:
        cells = "".join(f"  {by_key[(program.path, n)].outcome:<6}" for n in ranks)
        print(f"{program.name:<{width}}  {program.verdict + ' ' + program.rule:<{label_width}}{cells}")


def print_details(runs: list[Run]) -> None:
    """Say why each run that was not a clean TP or TN ended as it did."""
    odd = [run for run in runs if run.outcome in ("FP", "FAIL") or (run.outcome == "FN" and run.failed)]
    if odd:
        print("\nunexpected endings:")
        for run in odd:
            print(f"  {run.program.name} n={run.ranks} {run.outcome}: {run.last_error_line()}")


def print_totals(runs: list[Run]) -> dict[str, float | None]:
    counts = Counter(run.outcome for run in runs)
    scores = metrics(runs)
    print(f"\nruns: {len(runs)}")
    print(f"true positives:  {counts['TP']}")
    print(f"false positives: {counts['FP']}")
    print(f"true negatives:  {counts['TN']}")
    print(f"false negatives: {counts['FN']}")
    print(f"failed (safe program, non-zero exit without {MARKER}): {counts['FAIL']}")
    for name, value in scores.items():
        print(f"{name}: {percent(value)}")
    return scores


def print_rule_recall(runs: list[Run]) -> None:
    racy = defaultdict(list)
    for run in runs:
        if run.program.verdict == "racy":
            racy[run.program.rule].append(run)
    if racy:
        print("\nrecall per rule:")
        for rule in RULES:
            if rule in racy:
                found = sum(run.outcome == "TP" for run in racy[rule])
                print(f"  {rule:<10} {found:>3}/{len(racy[rule]):<3} {percent(ratio(found, len(racy[rule])))}")


def requirements_met(scores: dict[str, float | None], args: argparse.Namespace) -> bool:
    """Check the thresholds; an undefined score (no runs to judge it on) does not meet one."""
    ok = True
    for name, wanted in (("precision", args.require_precision), ("recall", args.require_recall)):
        if wanted is None:
            continue
        value = scores[name]
        if value is None or value < wanted:
            print(f"REQUIREMENT NOT MET: {name} {percent(value)} < {percent(wanted)}")
            ok = False
    return ok


def report_plain(runs: list[Run]) -> int:
    """--plain: every program, racy or not, must exit 0 when no checker is on."""
    failed = [run for run in runs if run.failed]
    for run in failed:
        print(f"FAILED {run.program.name} n={run.ranks}: {run.last_error_line()}")
    print(f"{len(runs)} runs without RMA_CHECK, {len(failed)} failed")
    return 1 if failed else 0


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, nargs="+", default=[2, 3], help="rank counts (default: 2 3)")
    parser.add_argument("--jobs", type=int, default=2, help="programs run in parallel (default: 2)")
    parser.add_argument("-k", dest="substring", help="only programs whose file name contains this")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per run (default: 60)")
    parser.add_argument("--plain", action="store_true", help="run without RMA_CHECK; list only failures")
    parser.add_argument("--require-precision", type=float, metavar="P", help="exit 1 if precision < P (0..1)")
    parser.add_argument("--require-recall", type=float, metavar="R", help="exit 1 if recall < R (0..1)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    programs = discover(args.substring)
    if not programs:
        print("no programs selected")
        return 0
    runs = run_all(programs, args.ranks, checked=not args.plain, jobs=args.jobs, timeout=args.timeout)
    if args.plain:
        return report_plain(runs)
    print_table(programs, args.ranks, runs)
    print_details(runs)
    scores = print_totals(runs)
    print_rule_recall(runs)
    return 0 if requirements_met(scores, args) else 1


if __name__ == "__main__":
    sys.exit(main())
