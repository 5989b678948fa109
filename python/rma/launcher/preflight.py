"""Before rmarun starts ranks on several hosts: can each host run the rank's Python with rma?

A rank that cannot import rma would end with a traceback per rank, among the other ranks' output,
after the others had started and waited for it. So rmarun asks each host once, all hosts at the
same time, through the same remote shell the ranks take, and refuses the job in one line that
names the host and the cause: the remote shell failed, the Python is missing there, or rma is.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import threading

from .hosts import HostError, is_local, rank_python, remote_command

__all__ = ["check_hosts", "PROBE_TIMEOUT"]

PROBE_TIMEOUT = 30.0  # seconds for a host to answer (ssh may take long to give up on a host)
_NO_RMA = 3  # the probe's exit status when rma does not import
_PROBE = f"""
try:
    import rma
except ImportError as exc:
    print(exc)
    raise SystemExit({_NO_RMA})
"""


def check_hosts(rsh: str, hosts: list[str], command: list[str]) -> None:
    """Raise HostError naming the first host (in the order given) that cannot run `command`'s
    Python with rma (this rmarun's Python, for a command that is not Python itself: the ranks'
    supervisors run under it, hosts.rank_python)."""
    python = rank_python(command)
    # This machine runs rmarun's own Python with rma: no need to ask it.
    asked = [
        host for host in hosts if not (is_local(host) and os.path.realpath(python) == os.path.realpath(sys.executable))
    ]
    problems: dict[str, str] = {}
    probes = [threading.Thread(target=_probe, args=(rsh, host, python, problems), daemon=True) for host in asked]
    for probe in probes:
        probe.start()
    for probe in probes:
        probe.join()
    for host in hosts:
        if host in problems:
            raise HostError(problems[host])


def _probe(rsh: str, host: str, python: str, problems: dict[str, str]) -> None:
    """Run the probe on host; record what went wrong in problems[host]."""
    probe = [python, "-c", _PROBE]
    local = is_local(host)
    argv = probe if local else remote_command(shlex.split(rsh), host, probe, {})
    how = "" if local else f" through `{rsh}`"
    try:
        result = subprocess.run(argv, capture_output=True, text=True, timeout=PROBE_TIMEOUT, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        problems[host] = f"host {host} did not answer{how} within {PROBE_TIMEOUT:g} s"
        return
    except OSError as exc:
        missing = f"host {host} has no {python}" if local else f"cannot run {argv[0]} to reach host {host}"
        problems[host] = f"{missing}: {exc.strerror or exc}"
        return
    last = (result.stderr.strip().splitlines() or result.stdout.strip().splitlines() or ["no output"])[-1]
    if result.returncode == _NO_RMA:
        problems[host] = f"host {host} has no rma for {python} ({result.stdout.strip()}): install it there"
    elif result.returncode == 127:
        problems[host] = f"host {host} has no {python} (the ranks' Python must have the same path on every host)"
    elif result.returncode != 0:
        problems[host] = f"cannot run {python} on host {host}{how} (exit status {result.returncode}: {last})"
