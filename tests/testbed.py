"""A test bed of several hosts on this machine, so that tests can run jobs across a network.

A host is a set of Linux namespaces: its own network (a loopback and an `eth0` on a private
bridge), its own hostname, its own mounts (a /dev/shm of its own) and its own process ids.
Only the bridge joins two hosts, so two ranks on different hosts share no memory, no
/dev/shm name and no loopback: they reach each other the way ranks on two machines do.

    with TestBed(2) as bed:
        bed.hosts[1].command(["python", "-c", "import socket; print(socket.gethostname())"])
        # -> the nsenter command line that runs it on host 1

Each host is held by one process (`unshare ... sleep`), the first process of its PID
namespace: when it dies, every process of the host dies with it, its namespaces go, and its
end of the bridge goes with them. It dies with the process that made the test bed (the
kernel's parent-death signal), so a test run that is killed leaves no host behind; the
bridge, which lives in this machine's own namespace, carries the maker's pid in its alias
and the next test bed removes it when that process is gone.

Needs root (or CAP_SYS_ADMIN and CAP_NET_ADMIN), iproute2 and util-linux. TestBed.refusal()
says why a test bed cannot be made here, for a test's skip reason.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator

from rma._job.spawn import child_pids, pid_alive, rank_environment
from rma._job.store_server import StoreServer

__all__ = ["TestBed", "Host", "TestBedError", "Job"]

# Bridges are named rmatb<N> and hold 10.213.<N>.0/24: <N>.1 is the bridge, <N>.2 + i host i.
_BRIDGE_PREFIX = "rmatb"
_ALIAS_PREFIX = "rma-testbed-pid-"
_SUBNET = "10.213"
_MAX_BEDS = 200
# Seconds a host may take to appear.
_START_TIMEOUT = 10.0


class TestBedError(Exception):
    """The test bed could not be made; the message says why."""

    __test__ = False  # not a test class, for pytest


def _run(*argv: str, check: bool = True) -> subprocess.CompletedProcess:
    result = subprocess.run(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if check and result.returncode != 0:
        raise TestBedError(f"test bed: `{' '.join(argv)}` failed: {(result.stderr or result.stdout).strip()}")
    return result


def _bridges() -> dict[str, str]:
    """This machine's test bed bridges: name -> alias."""
    found = {}
    for line in _run("ip", "-o", "link", "show", "type", "bridge").stdout.splitlines():
        match = re.match(r"\d+: (" + _BRIDGE_PREFIX + r"\d+)[:@]", line)
        if match:
            alias = re.search(r"alias (\S+)", line)
            found[match.group(1)] = alias.group(1) if alias else ""
    return found


def remove_stale_bridges() -> None:
    """Remove the bridges of test beds whose maker is gone (it was killed before it could), and
    host links whose bridge is gone."""
    bridges = _bridges()
    for name, alias in list(bridges.items()):
        owner = alias[len(_ALIAS_PREFIX) :] if alias.startswith(_ALIAS_PREFIX) else ""
        if not owner.isdigit() or not pid_alive(int(owner)):
            _run("ip", "link", "del", name, check=False)
            del bridges[name]
    for line in _run("ip", "-o", "link", "show", "type", "veth").stdout.splitlines():
        match = re.match(r"\d+: ((" + _BRIDGE_PREFIX + r"\d+)h\d+)[:@]", line)
        if match and match.group(2) not in bridges:
            _run("ip", "link", "del", match.group(1), check=False)


class Host:
    """One host of the test bed: its name (also its hostname), address, and holder process."""

    def __init__(self, name: str, address: str, holder: subprocess.Popen, first_pid: int, link: str):
        self.name = name
        self.address = address
        self.link = link  # its end of the bridge, on this machine
        self._holder = holder
        self._first_pid = first_pid  # pid 1 of the host's PID namespace, as this machine sees it

    def command(self, argv: list[str], cwd: str | None = None) -> list[str]:
        """The command line that runs argv on this host, in cwd (default: ours).

        The program is a child of nsenter (it enters the PID namespace by forking): signals
        sent to the nsenter process do not reach it, but its process group does.
        """
        return [
            "nsenter", "-t", str(self._first_pid), "--net", "--uts", "--mount", "--pid",
            f"--wd={cwd or os.getcwd()}", "--", *argv,
        ]  # fmt: skip

    def run(self, argv: list[str], **kwargs) -> subprocess.CompletedProcess:
        """Run argv on this host and wait for it (subprocess.run's keyword arguments)."""
        return subprocess.run(self.command(argv), **kwargs)

    def cut_link(self) -> None:
        """Take the host off the bridge: its processes live on, but nothing reaches them, and
        nothing they send arrives (no reset, no FIN: a silent link)."""
        _run("ip", "link", "set", self.link, "down")

    def processes(self) -> int:
        """How many processes run on the host besides its holder."""
        result = self.run(["ls", "/proc"], capture_output=True, text=True, timeout=10)
        pids = [name for name in result.stdout.split() if name.isdigit()]
        return len(pids) - 2  # the holder's sleep, and ls itself

    def stop(self) -> None:
        """End the host and every process on it."""
        if self._holder.poll() is None:
            self._holder.kill()  # --kill-child: the host's first process, and so all of it, follows
        self._holder.communicate()  # reaps it and closes its pipes

    def shm_files(self) -> list[str]:
        """The names in this host's /dev/shm."""
        result = self.run(["ls", "-A", "/dev/shm"], capture_output=True, text=True, timeout=10)
        return result.stdout.split()


class TestBed:
    """`hosts` hosts joined by one bridge; a context manager that removes them at its end."""

    __test__ = False  # not a test class, for pytest

    def __init__(self, hosts: int):
        reason = self.refusal()
        if reason:
            raise TestBedError(reason)
        remove_stale_bridges()
        self.hosts: list[Host] = []
        self.bridge = ""
        try:
            self._make_bridge()
            for i in range(hosts):
                self.hosts.append(self._make_host(i))
            self._check_links()
        except BaseException:
            self.close()
            raise

    @staticmethod
    def refusal() -> str | None:
        """Why a test bed cannot be made here, or None."""
        if sys.platform != "linux":
            return "the test bed needs Linux namespaces"
        if os.geteuid() != 0:
            return "the test bed needs root (network, mount and PID namespaces, a bridge)"
        missing = [tool for tool in ("ip", "unshare", "nsenter", "setpriv") if shutil.which(tool) is None]
        if missing:
            return f"the test bed needs {', '.join(missing)} (iproute2, util-linux)"
        probe = _run("unshare", "--net", "--uts", "--mount", "--pid", "--fork", "true", check=False)
        if probe.returncode != 0:
            return f"the kernel refuses namespaces here: {probe.stderr.strip()}"
        return None

    # -- making it ------------------------------------------------------

    def _make_bridge(self) -> None:
        taken = {int(name[len(_BRIDGE_PREFIX) :]) for name in _bridges()}
        for index in range(_MAX_BEDS):
            if index in taken:
                continue
            name = f"{_BRIDGE_PREFIX}{index}"
            if _run("ip", "link", "add", name, "type", "bridge", check=False).returncode == 0:
                break
        else:
            raise TestBedError(f"test bed: no free bridge name among {_BRIDGE_PREFIX}0-{_MAX_BEDS - 1}")
        self.bridge, self._index = name, index
        _run("ip", "link", "set", name, "alias", f"{_ALIAS_PREFIX}{os.getpid()}")
        _run("ip", "addr", "add", f"{self.switch_address}/24", "dev", name)
        _run("ip", "link", "set", name, "up")

    @property
    def switch_address(self) -> str:
        """The bridge's address on this machine: where every host reaches a service of the tests."""
        return f"{_SUBNET}.{self._index}.1"

    def _make_host(self, i: int) -> Host:
        name = f"tb{self._index}h{i}"
        address = f"{_SUBNET}.{self._index}.{2 + i}"
        setup = (
            f"hostname {name} && mount -t tmpfs -o mode=1777 tmpfs /dev/shm && ip link set lo up"
            " && echo ready && exec sleep infinity"
        )
        holder = subprocess.Popen(
            ["setpriv", "--pdeathsig", "KILL", "unshare", "--net", "--uts", "--mount", "--pid", "--fork",
             "--kill-child", "--mount-proc", "sh", "-c", setup],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        line = holder.stdout.readline() if holder.stdout else ""
        first = child_pids(holder.pid)
        if line.strip() != "ready" or not first:
            holder.kill()
            _, err = holder.communicate()
            raise TestBedError(f"test bed: host {name} did not start: {err.strip() or 'no reason given'}")
        outside = f"{self.bridge}h{i}"
        host = Host(name, address, holder, first[0], outside)
        _run("ip", "link", "add", outside, "type", "veth", "peer", "name", "eth0", "netns", str(first[0]))
        _run("ip", "link", "set", outside, "master", self.bridge, "up")
        inside = host.command(["sh", "-c", f"ip addr add {address}/24 dev eth0 && ip link set eth0 up"], cwd="/")
        _run(*inside)
        return host

    def _check_links(self) -> None:
        """Each host reaches the bridge (a firewall on this machine could drop bridged traffic)."""
        with socket.socket() as listener:
            listener.bind((self.switch_address, 0))
            listener.listen(len(self.hosts))
            port = listener.getsockname()[1]
            probe = f"import socket; socket.create_connection(('{self.switch_address}', {port}), timeout=5).close()"
            for host in self.hosts:
                result = host.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=15)
                if result.returncode != 0:
                    raise TestBedError(f"test bed: host {host.name} cannot reach the bridge: {result.stderr.strip()}")
                listener.accept()[0].close()

    # -- ending it ------------------------------------------------------

    def close(self) -> None:
        """End every host (and its processes), then remove the bridge. Idempotent."""
        for host in self.hosts:
            host.stop()
            # Its end of the link too: the host's network namespace may outlive its processes
            # a while (sockets still sending into a link that was cut), and its link with it.
            _run("ip", "link", "del", host.link, check=False)
        self.hosts = []
        if self.bridge:
            _run("ip", "link", "del", self.bridge, check=False)
            self.bridge = ""

    def __enter__(self) -> TestBed:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def rsh_environment(self) -> dict[str, str]:
        """The variable `testbed.py rsh` finds this test bed's hosts in."""
        return {RSH_HOSTS: json.dumps({host.name: host._first_pid for host in self.hosts})}

    def host_of(self, rank: int, size: int) -> Host:
        """Where rank `rank` of a job of `size` ranks runs: consecutive ranks share a host, and
        every host gets ranks before any gets a second share (2 hosts, 4 ranks: 0 0 1 1; 3
        hosts, 4 ranks: 0 0 1 2)."""
        return self.hosts[rank * len(self.hosts) // size] if size >= len(self.hosts) else self.hosts[rank]


class Job:
    """Ranks started by hand on the test bed's hosts with the store's address, as a cluster's
    launcher starts them; their output is collected when they end."""

    def __init__(self, bed: TestBed, size: int, argv: list[str], env: dict[str, str] | None = None):
        self.store = StoreServer(size, host=bed.switch_address)
        self.store.start()
        self.procs = []
        for rank in range(size):
            environment = rank_environment(rank, size, self.store.reachable_address, self.store.secret)
            environment.update(env or {})
            self.procs.append(
                subprocess.Popen(
                    bed.host_of(rank, size).command(argv),
                    env=environment,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                    start_new_session=True,
                )
            )

    def outcome(self, timeout: float) -> list[tuple[int, str, str]]:
        """Each rank's (exit status, stdout, stderr) once all ended; killed after timeout."""
        try:
            done = []
            for proc in self.procs:
                out, err = proc.communicate(timeout=timeout)
                done.append((proc.returncode, out, err))
            return done
        finally:
            self.close()

    def close(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                os.killpg(proc.pid, 9)
                proc.communicate()
        self.store.close()


# A remote shell into the test bed's hosts, for launchers that start processes through one
# (MPICH's hydra -launcher-exec, Open MPI's plm_rsh_agent, rmarun --rsh): the hosts' names and
# first pids travel in this variable, as TestBed.rsh_environment() gives it.
RSH_HOSTS = "RMA_TESTBED_HOSTS"


def bed_or_skip(hosts: int = 2) -> Iterator[TestBed]:
    """For a pytest fixture (`yield from bed_or_skip(n)`): a test bed of `hosts` hosts, closed
    after the test, or a skip that says why the kernel refuses one."""
    import pytest

    why = TestBed.refusal()
    if why:
        pytest.skip(why)
    try:
        with TestBed(hosts) as made:
            yield made
    except TestBedError as exc:
        pytest.skip(str(exc))


def rsh(argv: list[str]) -> int:
    """`testbed.py rsh [-options] HOST COMMAND...`: run COMMAND (joined, by sh) on HOST, as ssh
    would; the options ssh takes and launchers pass (-x, -T, -o ...) are skipped."""
    hosts = json.loads(os.environ.get(RSH_HOSTS, "{}"))
    args = list(argv)
    while args and args[0].startswith("-"):
        option = args.pop(0)
        if option in ("-o", "-p", "-l", "-i", "-F") and args:
            args.pop(0)
    if not args or args[0] not in hosts:
        print(f"testbed rsh: unknown host {args[0] if args else '(none)'}; known: {sorted(hosts)}", file=sys.stderr)
        return 255
    command = " ".join(args[1:])
    prefix = ["nsenter", "-t", str(hosts[args[0]]), "--net", "--uts", "--mount", "--pid", "--wd=/"]
    return subprocess.call([*prefix, "sh", "-c", f"cd {shlex.quote(os.getcwd())} 2>/dev/null; {command}"])


if __name__ == "__main__":
    if sys.argv[1:2] == ["rsh"]:
        sys.exit(rsh(sys.argv[2:]))
    # `python tests/testbed.py`: whether a test bed can be made here (status 0), or why not (1).
    why = TestBed.refusal()
    print(why or "a test bed can be made here")
    sys.exit(1 if why else 0)
