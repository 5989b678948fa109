"""Where rmarun's ranks run: the hosts of --host and --hostfile, how ranks are placed on their
slots, and how a rank is started on another host through a remote shell (--rsh).

A rank on another host runs `RSH HOST 'cd DIR && exec env RMA_...=... COMMAND'`: the remote
shell carries no environment, so the variables that make the process a rank (and the user's
own RMA_* settings) travel on its command line, and the command (the same Python, the same
script path) must exist there too, as on a cluster's shared file system.
"""

from __future__ import annotations

import functools
import os
import shlex
import socket
import sys
from dataclasses import dataclass

from .._job.store_protocol import address_towards

__all__ = [
    "Host", "HostError", "parse_host_list", "parse_hostfile", "place", "is_local", "remote_command",
    "store_address_for", "rank_python", "refuse_remote_stdin",
]  # fmt: skip


class HostError(ValueError):
    """A host list or hostfile that cannot be used; its message is one line for the user."""


@dataclass(frozen=True)
class Host:
    name: str
    slots: int


def _slots(text: str, where: str) -> int:
    try:
        slots = int(text)
    except ValueError:
        raise HostError(f"{where}: slots must be a whole number, not {text!r}") from None
    if slots < 1:
        raise HostError(f"{where}: slots must be at least 1, not {slots}")
    return slots


def parse_host_list(text: str) -> list[Host]:
    """`a:2,b:2` (or `a,b`: one slot each), as --host takes it."""
    hosts = []
    for item in text.split(","):
        item = item.strip()
        name, _, slots = item.partition(":")
        if not name:
            raise HostError(f"--host {text}: an empty host name")
        hosts.append(Host(name, _slots(slots, f"--host {item}") if slots else 1))
    return _merged(hosts)


def parse_hostfile(path: str) -> list[Host]:
    """One `host [slots=N]` per line, as Open MPI's hostfiles; `#` starts a comment."""
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except OSError as exc:
        raise HostError(f"--hostfile {path}: {exc.strerror or exc}") from None
    hosts = []
    for number, line in enumerate(lines, 1):
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        where = f"{path}:{number}"
        slots = 1
        for word in words[1:]:
            key, _, value = word.partition("=")
            if key in ("slots", "max_slots", "max-slots") and value:
                if key == "slots":
                    slots = _slots(value, where)
            else:
                raise HostError(f"{where}: expected `host slots=N`, found {word!r}")
        hosts.append(Host(words[0], slots))
    if not hosts:
        raise HostError(f"--hostfile {path}: no hosts in it")
    return _merged(hosts)


def _merged(hosts: list[Host]) -> list[Host]:
    # A host named twice has the slots of both, in the place of its first mention.
    slots: dict[str, int] = {}
    for host in hosts:
        slots[host.name] = slots.get(host.name, 0) + host.slots
    return [Host(name, count) for name, count in slots.items()]


def place(hosts: list[Host], size: int) -> list[str]:
    """The host of each rank: the first host's slots are filled first, then the next's
    (a:2,b:2 with 4 ranks: a a b b; with 3: a a b)."""
    total = sum(host.slots for host in hosts)
    if size > total:
        listed = ",".join(f"{host.name}:{host.slots}" for host in hosts)
        raise HostError(f"{size} ranks do not fit the {total} slot(s) of the hosts ({listed})")
    names = [host.name for host in hosts for _ in range(host.slots)]
    return names[:size]


@functools.cache
def is_local(name: str) -> bool:
    """Whether ranks on `name` start here, without the remote shell. (Once per name: getfqdn
    may ask DNS, and rmarun asks for every rank.)"""
    return name in ("localhost", "127.0.0.1", "::1") or name in (socket.gethostname(), socket.getfqdn())


def rank_python(command: list[str]) -> str:
    """The Python that runs on the ranks' hosts: the command's own when it is Python, else this
    rmarun's (the same path there). A rank's supervisor runs under it (rma._job.supervisor)."""
    return command[0] if os.path.basename(command[0]).startswith("python") else sys.executable


def remote_command(
    rsh: list[str], host: str, command: list[str], env: dict[str, str], carry: tuple[str, ...] = ()
) -> list[str]:
    """The local argv that runs `command` on `host` with the variables of `env` that a rank
    needs there (RMA_*, PYTHONUNBUFFERED, and those named in `carry`), in this directory."""
    wanted = ("PYTHONUNBUFFERED", *carry)
    carried = {key: value for key, value in env.items() if key.startswith("RMA_") or key in wanted}
    assignments = " ".join(shlex.quote(f"{key}={value}") for key, value in sorted(carried.items()))
    line = f"cd {shlex.quote(os.getcwd())} && exec env {assignments} {shlex.join(command)}"
    return [*rsh, host, line]


# ssh's options that take a value (the next word, or the rest of the word): `ssh -p 22 -n` must
# not read the 22 as flags.
_SSH_VALUED = set("BbcDEeFIiJLlmOopQRSWw")


def refuse_remote_stdin(rsh: str, placement: list[str], stdin_ranks: list[int]) -> None:
    """HostError when a rank that --stdin gives rmarun's input runs on another host through an
    ssh told not to read its input (`-n`, or `-f`, which implies it): the rank would read
    nothing, without a word. Any other remote shell is trusted to pass its input on, as ssh
    and rsh do."""
    words = shlex.split(rsh)
    if not words or os.path.basename(words[0]) != "ssh":
        return
    option = None
    rest = iter(words[1:])
    for word in rest:
        if not word.startswith("-") or word == "-":
            break  # (the options end at the host's name)
        for i, letter in enumerate(word[1:], 1):
            if letter in "nf":
                option = option or f"-{letter}"
            if letter in _SSH_VALUED:
                if i == len(word) - 1:
                    next(rest, None)
                break
    remote = [rank for rank in stdin_ranks if not is_local(placement[rank])]
    if option and remote:
        raise HostError(
            f"--stdin: rank {remote[0]} runs on {placement[remote[0]]} through `{rsh}`, whose {option} gives it "
            "no input: drop the option from --rsh, or choose --stdin none or a rank of this machine"
        )


def store_address_for(hosts: list[str]) -> str:
    """The address of this machine that the first remote host reaches it by (the store must
    listen there). HostError when it cannot be told: the host's name does not resolve here."""
    host = hosts[0]
    try:
        return address_towards(host)
    except socket.gaierror as exc:
        raise HostError(
            f"cannot choose the store's address: host {host} does not resolve here ({exc.strerror}); "
            "give --store-host ADDRESS, an address of this machine that the hosts reach"
        ) from None
