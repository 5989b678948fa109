"""One rank's side of the trace (RMA_TRACE): start the compiled ring, align the clock, hand the
records over.

The records are made in the compiled layer (src/core/base/trace.hpp); this module starts the
ring, measures how far this rank's clock stands from rank 0's (the offset the merge adds, so
that ranks on different hosts share one time line) and turns the ring into a *part*: a JSON-able
dict of this rank's records, which rma.trace.merge joins into the job's trace.

Under RMA_TRACE=FILE every rank starts recording in rma.init() and writes its part to
FILE.rank-<R>.json when it exits, also when it fails (what it recorded so far); rmarun then
merges the parts into FILE. The notebook starts and takes a part around one cell.
"""

from __future__ import annotations

import atexit
import os
import signal
import socket
import sys
import time
from typing import Any

from .. import _core
from .._job import settings
from .files import write_json
from .part_format import PART_VERSION

__all__ = ["start", "stop", "take_part", "write_part", "part_path", "start_from_environment"]

# Round trips to rank 0 per rank when aligning clocks: the shortest gives the offset (its error
# is at most half that round trip).
_ROUND_TRIPS = 8
_ALIGN_TAG = 7

_state: dict[str, Any] = {"offset_ns": 0, "clock_error_ns": 0, "rank": 0, "size": 1}


def _clock_identity() -> tuple[str, str]:
    """What makes two ranks' CLOCK_MONOTONIC one clock: the same kernel (its boot id) seen from
    the same host name (a test bed's "hosts" share a kernel, and are measured as hosts are)."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as source:
            boot = source.read().strip()
    except OSError:
        boot = ""
    return socket.gethostname(), boot


def _clock_offset(comm) -> tuple[int, int]:
    """(offset, error) in ns: what to add to this rank's clock to read rank 0's, and at most how
    far that is off (collective over comm).

    A rank whose clock is rank 0's (_clock_identity) takes 0, exactly: measured, the round
    trips of ranks that share two cores are long and lopsided (hundreds of microseconds), more
    than a fence lasts. The others measure: the shortest of _ROUND_TRIPS round trips to rank 0,
    whose middle is the moment rank 0 read its clock, is off by at most half that trip."""
    if comm.size == 1:
        return 0, 0
    same_clock = comm.bcast(_clock_identity(), 0) == _clock_identity()
    measured = comm.allgather(not same_clock)
    if comm.rank == 0:
        for peer in range(1, comm.size):
            for _ in range(_ROUND_TRIPS if measured[peer] else 0):
                comm.recv(peer, _ALIGN_TAG)
                comm.send(time.monotonic_ns(), peer, _ALIGN_TAG)
        return 0, 0
    if same_clock:
        return 0, 0
    best_trip, offset = None, 0
    for _ in range(_ROUND_TRIPS):
        sent = time.monotonic_ns()
        comm.send(None, 0, _ALIGN_TAG)
        theirs = comm.recv(0, _ALIGN_TAG)
        back = time.monotonic_ns()
        if best_trip is None or back - sent < best_trip:
            best_trip, offset = back - sent, theirs - (sent + back) // 2
    return offset, (best_trip or 0) // 2


def start(comm, capacity: int | None = None) -> None:
    """Start recording this rank's trace (collective over comm, which should be the world).

    Clears the ring (`capacity` records, default RMA_TRACE_EVENTS) and finds this rank's clock
    offset to rank 0 over a duplicate of comm (no message of the program is touched).
    """
    offset, error = _clock_offset(comm.dup())
    _state.update(offset_ns=offset, clock_error_ns=error, rank=comm.rank, size=comm.size)
    _core._trace_start(capacity if capacity is not None else settings.trace_events())


def stop() -> None:
    """Stop recording (the records stay for take_part)."""
    _core._trace_stop()


def take_part() -> dict[str, Any]:
    """This rank's records since start (or the last take), as the merge reads them."""
    records, dropped, capacity = _core._trace_take()
    return {
        "rma_trace_part": PART_VERSION,
        "rank": _state["rank"],
        "size": _state["size"],
        "host": socket.gethostname(),
        "offset_ns": _state["offset_ns"],
        "clock_error_ns": _state["clock_error_ns"],
        "dropped": dropped,
        "capacity": capacity,
        "records": [list(record) for record in records],
    }


def part_path(trace_file: str, rank: int) -> str:
    """Where rank writes its part of trace_file."""
    return f"{trace_file}.rank-{rank}.json"


def write_part(trace_file: str) -> str:
    """Write this rank's part next to trace_file (whole or not at all: a temporary file, then a
    rename) and return its path."""
    part = take_part()
    path = part_path(trace_file, part["rank"])
    write_json(path, part)
    return path


def _mark_uncaught() -> None:
    """Mark the exception that ends this rank (Python keeps it in sys.last_value once printed):
    a rank's last event then says why its track ends."""
    error = getattr(sys, "last_value", None)
    if error is not None:
        _core._trace_error(type(error).__name__, f"uncaught: {error}")


def start_from_environment(comm) -> None:
    """rma.init()'s hook: under RMA_TRACE, start recording and write this rank's part at exit."""
    trace_file = settings.trace_file()
    if trace_file is None:
        return
    start(comm)
    written = False

    def finish() -> None:
        nonlocal written
        if written:
            return
        written = True
        try:
            _mark_uncaught()
            write_part(trace_file)
        except OSError as error:
            print(f"rma: rank {_state['rank']}: could not write its trace part: {error}", file=sys.stderr)

    atexit.register(finish)
    _write_when_stopped(finish)


def _write_when_stopped(finish) -> None:
    """When another rank fails, rmarun stops this one with SIGTERM, which ends Python without
    atexit: write the part first, then end as SIGTERM would have (the launcher's status rules
    stay). Python runs the handler once the rank's current compiled call returns, which a
    dead peer makes quick (PeerError); rmarun waits KILL_GRACE seconds before SIGKILL. A program
    that set its own SIGTERM handler keeps it."""
    try:
        if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
            return

        def stopped(number, frame) -> None:
            _core._trace_error("Stopped", "stopped by SIGTERM (another rank failed, or the launcher ended the job)")
            finish()
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)

        signal.signal(signal.SIGTERM, stopped)
    except ValueError:  # (rma.init() outside the main thread: Python takes handlers only there)
        pass
