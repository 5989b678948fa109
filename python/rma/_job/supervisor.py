"""A rank's supervisor on its host: it starts the rank, waits for it, then removes the files
the rank left in /dev/shm, whatever ended it.

rmarun cleans /dev/shm of its own host after the ranks it started there; it cannot reach the
/dev/shm of another host, and the pids it knows there are its remote shells', not the ranks'.
So on another host the remote shell runs `python -m rma._job.supervisor COMMAND...`, which
runs COMMAND as the rank and, once the rank has ended (finished, raised, killed by SIGKILL,
left because the job's store was lost), removes the files named after the rank's pid
(shm_files.py), then exits with the rank's status, and nothing of it is left.

It must outlive the rank however the rank ends, and the remote shell's connection, so:

* the rank stays in the process group the remote shell made (signals sent to that group reach
  the rank as before: Ctrl-C and SIGTERM forwarded by a shell, SIGKILL by rmarun's test bed),
  while the supervisor leaves it for a session of its own, so that a SIGKILL to that group
  does not take the supervisor along before it cleaned;
* a signal sent to the supervisor itself is passed on to the rank; a hang-up (the remote
  shell's connection gone) and a broken pipe are not its business: it waits for the rank,
  which ends once it loses the job's store (join.py);
* it never writes to the remote shell's pipes, which may be gone.

The rank ends, and so does the supervisor: it waits for nothing else, and it sleeps in
waitpid meanwhile.
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys

from .shm_files import cleanup_shm_files

__all__ = ["main", "supervised_command"]

# Signals that the supervisor passes on to its rank when they are sent to the supervisor alone.
_PASSED_ON = (signal.SIGINT, signal.SIGTERM, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)


def supervised_command(python: str, command: list[str]) -> list[str]:
    """The command line that runs `command` as a rank under a supervisor, with `python` (one
    that has rma, as the rank's has)."""
    return [python, "-m", "rma._job.supervisor", *command]


class _PassOn:
    """The supervisor's handler of the signals it passes on. It is a Python handler, not
    SIG_IGN, so that the rank starts with the default dispositions (exec resets handled
    signals, but keeps ignored ones)."""

    def __init__(self) -> None:
        self.rank: subprocess.Popen | None = None
        # Only once out of the remote shell's group: in it, the rank got the group's signal
        # itself, and passing it on would deliver it twice.
        self.own_session = False

    def __call__(self, number: int, frame: object) -> None:
        rank = self.rank
        if self.own_session and rank is not None and rank.returncode is None:
            try:
                rank.send_signal(number)
            except OSError:
                pass


def _ignore(number: int, frame: object) -> None:
    """A hang-up: the remote shell's connection is gone; the rank goes on until it ends."""


def _end_as(returncode: int) -> None:
    """Exit as the rank did: with its exit status, or killed by the same signal (no core file:
    the rank made one already, if any)."""
    if returncode >= 0:
        os._exit(returncode)
    number = -returncode
    try:
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if number not in (signal.SIGKILL, signal.SIGSTOP):  # (those have no handler to reset)
            signal.signal(number, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [number])
        os.kill(os.getpid(), number)
    except (OSError, ValueError):
        pass
    os._exit(128 + number)  # a signal whose default is not to end the process


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: python -m rma._job.supervisor COMMAND [ARGS...]", file=sys.stderr)
        return 2
    pass_on = _PassOn()
    for number in _PASSED_ON:
        signal.signal(number, pass_on)
    signal.signal(signal.SIGHUP, _ignore)
    try:
        # (restore_signals: the rank gets SIGPIPE's default back, which Python ignores.)
        rank = subprocess.Popen(argv, restore_signals=True)
    except OSError as exc:
        print(f"rma: cannot start the rank's program {argv[0]}: {exc.strerror or exc}", file=sys.stderr)
        return 127 if isinstance(exc, FileNotFoundError) else 126
    pass_on.rank = rank
    try:
        os.setsid()
        pass_on.own_session = True
    except OSError:
        pass  # it leads its session already (sshd made one): the rank shares its group
    # Nothing is written from here on: the remote shell's pipes may be gone.
    returncode = rank.wait()
    cleanup_shm_files([rank.pid])
    _end_as(returncode)
    return returncode  # (not reached)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
