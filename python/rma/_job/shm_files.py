"""Files that libfabric's shm provider and rma's bells and segments leave in /dev/shm.

The provider names each endpoint's 16 MiB region after its process id ("1234:0:0") and
unlinks it at a clean exit only. A killed process leaves its file behind; worse, a new process
that inherits the recycled pid cannot open its endpoint (fi_enable: Device or resource busy).
rma names each rank's bell the same way ("1234-rma-bell-0"), and the control blocks and the
memory of its same-host windows, which pools keep from one window to the next
("1234-rma-control-3", "1234-rma-data-5"), so the same cleanup finds them.
An allocate_shared window's segment is named "rma-1234-7" only between its creation and the
barrier that ends it; a rank killed in between leaves that name behind.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from .spawn import pid_alive

__all__ = ["cleanup_shm_files", "remove_stale_shm_files"]

SHM_DIR = "/dev/shm"


SEGMENT_PREFIX = "rma-"


def _leading_pid(name: str) -> int | None:
    """Return the pid a region file is named after ("1234:0:0", "rma-1234-7" -> 1234), or None."""
    if name.startswith(SEGMENT_PREFIX):
        name = name[len(SEGMENT_PREFIX) :]
        if "-" not in name:
            return None
    digits = len(name) - len(name.lstrip("0123456789"))
    # The pid must be the whole leading run of digits, followed by something else.
    if digits == 0 or digits == len(name):
        return None
    return int(name[:digits])


def cleanup_shm_files(pids: Iterable[int], shm_dir: str = SHM_DIR) -> list[str]:
    """Remove the region files of the given (dead) pids that belong to us; return their names.

    Never raises: cleaning up must not fail a job.
    """
    removed: list[str] = []
    try:
        wanted = {int(pid) for pid in pids}
        if not wanted:
            return removed
        uid = os.getuid()
        with os.scandir(shm_dir) as entries:
            for entry in entries:
                if _leading_pid(entry.name) not in wanted:
                    continue
                try:
                    if not entry.is_file(follow_symlinks=False) or entry.stat().st_uid != uid:
                        continue
                    os.unlink(entry.path)
                    removed.append(entry.name)
                except OSError:
                    pass
    except Exception:  # noqa: BLE001 - cleanup must never fail the job
        pass
    return removed


def remove_stale_shm_files(shm_dir: str = SHM_DIR) -> list[str]:
    """Remove region files of ours whose process is gone, and any named after this process.

    Called before this process opens a shm endpoint: a file with our own pid can only be a
    dead process's, and it would make our endpoint fail.
    """
    me = os.getpid()
    dead = set()
    try:
        for name in os.listdir(shm_dir):
            pid = _leading_pid(name)
            if pid is None:
                continue
            if pid == me or not pid_alive(pid):
                dead.add(pid)
    except OSError:
        return []
    return cleanup_shm_files(dead, shm_dir)
