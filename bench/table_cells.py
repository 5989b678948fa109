"""How bench/run.py's and bench/across_hosts.py's tables name, order and format a case: a case
is cases.py's name, with "@N" for its rank count where it is measured at several."""

from __future__ import annotations

from cases import COMMUNICATOR_CASES, SINGLE_CASES

BANDWIDTH = {"put_bw", "get_bw", "contended_fetch_and_op"}  # higher is better
TITLES = {
    "put": "put + flush latency (lock_all)",
    "get": "get + flush latency (lock_all)",
    "accumulate": "accumulate (SUM int64) + flush latency",
    "lock_put_unlock": "lock + put + unlock latency",
    "put_bw": "put bandwidth (64 puts, one flush)",
    "get_bw": "get bandwidth (64 gets, one flush)",
    "fetch_and_op": "fetch_and_op + flush latency",
    "compare_and_swap": "compare_and_swap + flush latency",
    "fence_empty": "empty fence",
    "fence_put": "fence epoch with one put",
    "pscw_put": "PSCW epoch with one put",
    "win_create_free": "window create + free",
    "barrier": "barrier",
    "wait_until_wake": "wait_until wake-up after a remote put (mpi4py: Win.Sync polling)",
    "contended_fetch_and_op": "fetch_and_op throughput, 4 ranks on one counter",
    # The communicator, at 2 and at 4 ranks (bench/cases.py --communicator); objects pickled.
    "comm_barrier": "comm barrier",
    "comm_bcast": "comm bcast (an int, from the root's side)",
    "comm_allreduce": "comm allreduce (an int)",
    "comm_scatter": "comm scatter (ints, from the root's side)",
    "comm_alltoall": "comm alltoall (ints)",
    "comm_sendrecv": "comm sendrecv around a ring (an int)",
    "comm_isend_irecv": "comm irecv + isend + waits around a ring",
    "comm_split_type": "comm split_type host (mpi4py: Split_type + Free)",
    "comm_Allreduce": "comm Allreduce of a float64 array",
    # The buffer collectives in mpi4py's spelling (bench/cases.py --collectives), root 0.
    "coll_Bcast": "Bcast of a float64 array",
    "coll_Gather": "Gather of a float64 array (per rank)",
    "coll_Allreduce": "Allreduce (SUM) of a float64 array",
    "coll_Iallreduce": "Iallreduce + Wait (SUM) of a float64 array",
    "coll_Sendrecv": "Sendrecv of a float64 array round a ring",
}


# Cases measured at one size (8 B, or none): their size column says 8 B. (cases.py, the job,
# says which they are.)
SINGLE = {*SINGLE_CASES, *COMMUNICATOR_CASES, "contended_fetch_and_op"}


def base(case: str) -> str:
    """The case without its rank count ("comm_barrier@4" -> "comm_barrier")."""
    return case.split("@")[0]


def title(case: str) -> str:
    base, _, ranks = case.partition("@")
    return TITLES[base] + (f", {ranks} ranks" if ranks else "")


def order(case: str) -> tuple[int, int]:
    base, _, ranks = case.partition("@")
    return list(TITLES).index(base), int(ranks or 0)


def size_text(size: int) -> str:
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale:
            return f"{size // scale} {unit}"
    return f"{size} B"


def fmt(case: str, value: float | None) -> str:
    if value is None:
        return ""
    if case == "contended_fetch_and_op":
        return f"{value:,.0f}/s"
    if case in BANDWIDTH:
        return f"{value / 1e9:.2f} GB/s"
    return f"{value * 1e6:.2f} us" if value < 1e-3 else f"{value * 1e3:.2f} ms"
