"""rma between two hosts of the test bed, beside mpi4py over MPICH (and, asked for, over Open
MPI), and a raw TCP ceiling between the same two hosts.

Run `./dev.sh bench --hosts` (as root; `python bench/run.py --hosts` in the project's venv): 3
repetitions take about 5 minutes on a 2-core machine. It makes a test bed of two hosts
(tests/testbed.py: namespaces joined by a bridge, so only tcp joins them), then, --repetitions
times and interleaved: a plain socket ping-pong (8 B) and stream between the hosts, and
bench/cases.py with 1 and with 2 ranks on each host, for rma (started as a cluster's launcher
starts them; `--baseline PYTHON` adds another build's rma as "rma before") and for each MPI
(its own launcher, reaching the hosts through `testbed.py rsh`; MPICH over libfabric's tcp as
rma, Open MPI over its tcp BTL with `--mpi openmpi`: its job would take 25 minutes, and is cut
after JOB_SECONDS, keeping the cases it finished). It writes
bench/results/across_hosts.md: per layout, each case's median per system, the ceiling the
network allows, and the ratios.

The ceiling of a latency case (put, get, accumulate + flush) is what one request and its reply
cost on a bare socket: a ping-pong round trip plus the size at the stream's bandwidth; of a
bandwidth case, the stream's bandwidth. Both ends of the socket are Python, like the ranks.

"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from cases import BANDWIDTH_CASES, LATENCY_CASES, SINGLE_CASES  # noqa: E402
from mpi_envs import MPI_SYSTEMS, ensure_env  # noqa: E402
from table_cells import BANDWIDTH, SINGLE, base, fmt, order, size_text, title  # noqa: E402
from testbed import Job, TestBed  # noqa: E402

CASES = HERE / "cases.py"
RESULTS = HERE / "results"
STREAM_SIZES = [4096, 32768, 262144, 1 << 20, 16 << 20]  # (the sizes of SIZES beyond 8 B)

# Host 1's end: echoes 8-byte pings until "stop", then takes streams, acknowledging each.
TCP_SERVER = """
import socket, sys
listener = socket.create_server((sys.argv[1], 0))
print(listener.getsockname()[1], flush=True)
conn, _ = listener.accept()
conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
def take(n):
    view = memoryview(bytearray(n))
    got = 0
    while got < n:
        try:
            got += conn.recv_into(view[got:], n - got, socket.MSG_DONTWAIT)
        except BlockingIOError:
            pass
    return view
while True:
    ping = bytes(take(8))
    if ping == b"stop----":
        break
    conn.sendall(ping)
while True:
    total = int.from_bytes(take(8), "little")
    if total == 0:
        break
    left = total
    buffer = bytearray(min(total, 1 << 20))
    while left:
        left -= conn.recv_into(buffer, min(left, len(buffer)))
    conn.sendall(b"k")
"""

# Host 0's end: the ping-pong, then one stream per size; prints JSON lines. It waits for the
# replies by polling, as the MPIs do (a blocking recv adds the kernel's wake-up to each trip).
TCP_CLIENT = """
import json, socket, sys, time
conn = socket.create_connection((sys.argv[1], int(sys.argv[2])))
conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
def take(n):
    got = b""
    while len(got) < n:
        try:
            got += conn.recv(n - len(got), socket.MSG_DONTWAIT)
        except BlockingIOError:
            pass
    return got
for _ in range(200):
    conn.sendall(b"warmup--"); take(8)
count = 5000
began = time.perf_counter()
for _ in range(count):
    conn.sendall(b"ping----"); take(8)
print(json.dumps({"case": "tcp_pingpong", "size": 8, "value": (time.perf_counter() - began) / count / 2}))
conn.sendall(b"stop----")
for size in json.loads(sys.argv[3]):
    total = max(size * 16, 64 << 20)
    chunk = bytes(size)
    began = time.perf_counter()
    conn.sendall(total.to_bytes(8, "little"))
    sent = 0
    while sent < total:
        conn.sendall(chunk[: min(size, total - sent)])
        sent += min(size, total - sent)
    take(1)
    print(json.dumps({"case": "tcp_stream", "size": size, "value": total / (time.perf_counter() - began)}))
conn.sendall((0).to_bytes(8, "little"))
"""


def say(text: str) -> None:
    print(f"bench --hosts: {text}", flush=True)


def tcp_ceiling(bed: TestBed) -> list[dict]:
    server = subprocess.Popen(
        bed.hosts[1].command([sys.executable, "-c", TCP_SERVER, bed.hosts[1].address]),
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        port = server.stdout.readline().strip()
        client = bed.hosts[0].run(
            [sys.executable, "-c", TCP_CLIENT, bed.hosts[1].address, port, json.dumps(STREAM_SIZES)],
            capture_output=True,
            text=True,
            timeout=300,
        )
        if client.returncode != 0:
            raise RuntimeError(f"the TCP ceiling failed: {client.stderr[-2000:]}")
        server.wait(timeout=30)
    finally:
        if server.poll() is None:
            server.kill()
        server.communicate()
    return [json.loads(line) for line in client.stdout.splitlines() if line.startswith("{")]


# The layouts measured: ranks on each of the two hosts. At 2 per host the origin (rank 0) and the
# target (rank 2, cases.py's size // 2) are on different hosts, and every window is mixed: shared
# memory to the rank beside, tcp to the other host.
PER_HOST = [1, 2]
# Sizes of the latency and bandwidth cases: small, a page, the medium transfers, bulk.
SIZES = "8,4096,32768,262144,1048576,16777216"
# Left out of the MPIs' jobs: MPI has no wait_until, and cases.py's stand-in (polling the memory
# with Win.Sync in a passive epoch) never sees the put across hosts under MPICH: its job spun
# at 100% of both cores until killed (16 minutes and more, 2026-11-28/29).
MPI_LEFT_OUT = {"wait_until_wake"}
RMA_CASES = LATENCY_CASES + BANDWIDTH_CASES + SINGLE_CASES
MPI_CASES = [case for case in RMA_CASES if case not in MPI_LEFT_OUT]


def cases_args(cases: list[str]) -> list[str]:
    return ["--cases", ",".join(cases), "--sizes", SIZES]


def rma_cases(bed: TestBed, ranks: int, python: str = sys.executable) -> list[dict]:
    """cases.py with rma (the given interpreter's install), started as a cluster's launcher starts ranks."""
    job = Job(bed, ranks, [python, str(CASES), "--backend", "rma", *cases_args(RMA_CASES)])
    outcome = job.outcome(timeout=JOB_SECONDS)
    for rank, (status, _, err) in enumerate(outcome):
        if status != 0:
            raise RuntimeError(f"rank {rank} of bench/cases.py failed:\n{err[-2000:]}")
    return [json.loads(line) for line in outcome[0][1].splitlines() if line.startswith("{")]


def mpi_command(bed: TestBed, python: Path, package: str, rsh: str, ranks: int) -> tuple[list[str], dict[str, str]]:
    """The launcher command of bench/cases.py over an MPI across the two hosts, and its environment."""
    hosts = ",".join(host.name for host in bed.hosts)
    per_host = ranks // len(bed.hosts)
    subnet = bed.switch_address.rsplit(".", 1)[0] + ".0/24"
    mpiexec = str(python.parent / "mpiexec")
    env = dict(os.environ, **bed.rsh_environment())
    if package == "mpich":
        # Hydra starts its proxies through the remote shell; they call back on the bridge.
        launcher = [mpiexec, "-launcher", "ssh", "-launcher-exec", rsh, "-iface", bed.bridge, "-hosts", hosts]
        launcher += ["-n", str(ranks), "-ppn", str(per_host)]
        # libfabric's tcp between the hosts, as rma; its shared memory between the ranks of one.
        env.update(MPIR_CVAR_CH4_NETMOD="ofi", FI_PROVIDER="tcp")
    else:
        launcher = [mpiexec, "--host", ",".join(f"{h.name}:{per_host}" for h in bed.hosts), "-n", str(ranks)]
        launcher += ["--map-by", f"ppr:{per_host}:node"]
        launcher += ["--allow-run-as-root"] if os.getuid() == 0 else []
        # Daemons started one by one from here (a daemon inside a host cannot enter another),
        # their control traffic and the ranks' on the bridge's subnet.
        launcher += ["--prtemca", "plm_ssh_agent", rsh, "--prtemca", "plm_ssh_no_tree_spawn", "1"]
        launcher += ["--prtemca", "oob_tcp_if_include", subnet, "--mca", "btl", "self,vader,tcp"]
        launcher += ["--mca", "btl_tcp_if_include", subnet, "--mca", "osc", "^ucx"]
    return launcher + [str(python), str(CASES), "--backend", "mpi4py", *cases_args(MPI_CASES)], env


# Seconds one job may take (an rma job takes about 10 s, MPICH's 20 s); past this the results
# so far are kept. Open MPI's one-sided calls over its tcp BTL take 8 ms or more each across
# hosts, so its job would run 25 minutes: it is cut here.
JOB_SECONDS = 300


def mpi_cases(command: list[str], env: dict[str, str]) -> list[dict]:
    """Its job's results; the ones printed before JOB_SECONDS if it takes longer."""
    with subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as job:
        try:
            out, err = job.communicate(timeout=JOB_SECONDS)
        except subprocess.TimeoutExpired:
            job.kill()
            out, err = job.communicate()
            say(f"{' '.join(command[:1])}: stopped after {JOB_SECONDS} s; keeping the cases it finished")
        else:
            if job.returncode != 0:
                raise RuntimeError(f"{' '.join(command[:3])}... failed:\n{err[-2000:]}")
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def ceiling_of(case: str, size: int, tcp: dict) -> float | None:
    """What the bare network allows for a case (see the module's docstring); None: not comparable."""
    round_trip = 2 * tcp[("tcp_pingpong", 8)]
    streams = {s: v for (c, s), v in tcp.items() if c == "tcp_stream"}
    bandwidth = streams[min(streams, key=lambda s: abs(s - size))] if streams else None
    if case in ("put", "get", "accumulate", "lock_put_unlock"):
        return round_trip + (size / bandwidth if bandwidth else 0.0)
    if case in ("fetch_and_op", "compare_and_swap", "fence_put", "pscw_put"):
        return round_trip
    if case in ("put_bw", "get_bw"):
        return bandwidth
    return None


def main(repetitions: int, mpis: list[str] | None = None, baseline: str | None = None) -> None:
    """mpis: the MPI packages to run beside rma ("mpich", "openmpi"); None: MPICH only (Open MPI's
    job is too slow across hosts to wait for), []: none. baseline: another build's python, run
    as "rma before" beside rma, interleaved."""

    reason = TestBed.refusal()
    if reason:
        raise SystemExit(f"bench --hosts: {reason}")
    RESULTS.mkdir(exist_ok=True)
    mpis = ["mpich"] if mpis is None else mpis
    systems = {}
    for name, package in MPI_SYSTEMS.items():
        if package in mpis:
            python = ensure_env(name, package)
            if python is not None:
                systems[name] = (python, package)
    builds = {"rma": sys.executable, **({"rma before": baseline} if baseline else {})}
    names = [*builds, *systems]
    values: dict[tuple[int, str, int, str], list[float]] = {}  # (per host, case, size, system)
    began = time.monotonic()
    with TestBed(2) as bed, tempfile.TemporaryDirectory() as scratch:
        say(f"test bed: {', '.join(f'{h.name} ({h.address})' for h in bed.hosts)}")
        rsh = os.path.join(scratch, "rsh")
        with open(rsh, "w") as script:
            script.write(f'#!/bin/sh\nexec "{sys.executable}" "{HERE.parent / "tests" / "testbed.py"}" rsh "$@"\n')
        os.chmod(rsh, 0o755)
        for repetition in range(1, repetitions + 1):
            for result in tcp_ceiling(bed):
                values.setdefault((0, result["case"], result["size"], "TCP"), []).append(result["value"])
            for per_host in PER_HOST:
                ranks = per_host * len(bed.hosts)
                runs = [(name, rma_cases(bed, ranks, python)) for name, python in builds.items()]
                for name, (python, package) in systems.items():
                    runs.append((name, mpi_cases(*mpi_command(bed, python, package, rsh, ranks))))
                for name, results in runs:
                    for result in results:
                        if result["value"] is not None:
                            key = (per_host, result["case"], result["size"], name)
                            values.setdefault(key, []).append(result["value"])
                elapsed = time.monotonic() - began
                say(f"repetition {repetition}/{repetitions}, {per_host} per host: done ({elapsed:.0f} s)")
    write_tables(values, names, repetitions, time.monotonic() - began)


def write_tables(values, names, repetitions, seconds) -> None:
    medians = {key: statistics.median(samples) for key, samples in values.items()}
    tcp = {(case, size): v for (_, case, size, name), v in medians.items() if name == "TCP"}
    lines = []
    for per_host in PER_HOST:
        lines.append(f"\n#### {per_host} rank{'s' if per_host > 1 else ''} per host\n")
        lines += table(per_host, medians, names, tcp)
    ping = tcp.get(("tcp_pingpong", 8))
    streams = ", ".join(f"{size_text(s)}: {v / 1e9:.2f} GB/s" for (c, s), v in sorted(tcp.items()) if c == "tcp_stream")
    lines.append(
        f"\nTwo test-bed hosts, 1 and 2 ranks on each (the origin, rank 0, and the target on different "
        f"hosts); median of {repetitions} repetition(s), {seconds / 60:.1f} minutes in all. TCP between "
        f"the same hosts (Python at both ends, polling): half a ping-pong round trip {ping * 1e6:.1f} us; "
        f"stream {streams}. Latency: lower is better, a ratio below 1 means rma is faster; bandwidth: "
        "higher is better, a ratio above 1 means rma is faster. rma / ceiling: 1 means rma costs what a "
        "bare request and reply cost (latency), or reaches the stream's bandwidth. Not run by the MPIs: "
        f"{', '.join(sorted(MPI_LEFT_OUT))} (see bench/across_hosts.py).\n"
    )
    (RESULTS / "across_hosts.md").write_text("\n".join(lines).lstrip("\n") + "\n")
    print("\n".join(lines))
    say(f"written to {RESULTS / 'across_hosts.md'} after {seconds / 60:.1f} minutes")


def table(per_host, medians, names, tcp) -> list[str]:
    mpis = [n for n in names if not n.startswith("rma")]
    before = "rma before" in names
    header = ["case", "size", *names, "TCP ceiling", "rma / best MPI", "rma / ceiling"]
    header += ["before / rma"] if before else []
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    rows = {(c, s) for (p, c, s, n) in medians if p == per_host and n == "rma"}
    for case, size in sorted(rows, key=lambda k: (order(k[0]), k[1])):
        row = {name: medians.get((per_host, case, size, name)) for name in names}
        ceiling = ceiling_of(case, size, tcp)
        higher_better = case in BANDWIDTH
        best = [row[m] for m in mpis if row[m] is not None]
        reference = (max(best) if higher_better else min(best)) if best else None
        versus_mpi = f"{row['rma'] / reference:.2f}" if reference else ""
        versus_ceiling = f"{row['rma'] / ceiling:.2f}" if ceiling else ""
        size_cell = size_text(size) if base(case) not in SINGLE else "8 B"
        cells = [title(case), size_cell, *(fmt(case, row[n]) for n in names), fmt(case, ceiling)]
        cells += [versus_mpi, versus_ceiling]
        if before:
            old = row["rma before"]
            cells.append(f"{(row['rma'] / old if higher_better else old / row['rma']):.2f}" if old else "")
        lines.append("| " + " | ".join(cells) + " |")
    return lines
