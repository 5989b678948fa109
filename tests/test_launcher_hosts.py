"""rmarun across hosts: --host, --hostfile and --rsh, with ranks on the hosts of a test bed
(tests/testbed.py) reached through its remote shell (`testbed.py rsh`), as ssh reaches a
cluster's nodes. Every run has a timeout; nothing of a job may be left on any host.
"""

import os
import signal
import subprocess
import sys
import time
import uuid

import pytest

from processes import gone_soon, run_in_own_group
from rma.launcher.hosts import Host, HostError, parse_host_list, parse_hostfile, place
from testbed import TestBed

HERE = os.path.dirname(os.path.abspath(__file__))
WAIT = 90.0
RMARUN = [sys.executable, "-m", "rma"]
RSH = f"{sys.executable} {os.path.join(HERE, 'testbed.py')} rsh"


@pytest.fixture(scope="module")
def bed():
    why = TestBed.refusal()
    if why:
        pytest.skip(why)
    with TestBed(2) as made:
        yield made


def run(bed, *args, code, timeout=WAIT, store_host=True):
    """rmarun with args and `-c code` across the test bed's hosts; the CompletedProcess."""
    options = ["--rsh", RSH, *args]
    if store_host:
        options += ["--store-host", bed.switch_address]
    env = dict(os.environ, **bed.rsh_environment())
    return run_in_own_group([*RMARUN, *options, "-c", code], timeout=timeout, env=env)


RING = """
import socket, numpy as np, rma
comm = rma.init()
win = rma.Window.allocate(comm, 1, np.int64)
win.fence()
win.put(np.array([comm.rank + 100]), (comm.rank + 1) % comm.size)
win.fence()
print(comm.rank, socket.gethostname(), comm.allreduce(comm.rank), int(win.local[0]), win.transport, flush=True)
win.free()
"""


@pytest.mark.parametrize("size", [1, 2, 3, 4])
def test_ranks_run_on_their_hosts_and_meet(bed, size):
    h0, h1 = (host.name for host in bed.hosts)
    result = run(bed, "--host", f"{h0}:2,{h1}:2", "-n", str(size), code=RING)
    assert result.returncode == 0, result.stderr
    rows = sorted(line.split() for line in result.stdout.splitlines())
    assert [int(row[0]) for row in rows] == list(range(size))
    # The first host's slots fill first.
    assert [row[1] for row in rows] == [h0, h0, h1, h1][:size]
    assert {int(row[2]) for row in rows} == {size * (size - 1) // 2}
    # Each rank got its left neighbour's put, through shared memory or across the network.
    assert [int(row[3]) for row in rows] == [(rank - 1) % size + 100 for rank in range(size)]
    assert {row[4] for row in rows} == {"mixed" if size > 2 else "shared-memory"}


STDIN_READER = """
import socket, sys, rma
comm = rma.init()
line = input() if comm.rank == int(sys.argv[1]) else None
print(comm.rank, socket.gethostname(), line, flush=True)
"""


@pytest.mark.parametrize("reader", [0, 1])
def test_standard_input_reaches_the_chosen_rank_on_its_host(bed, reader):
    # --stdin RANK (issue 40): rank 1 lives on the second host and reads through the remote shell.
    h0, h1 = (host.name for host in bed.hosts)
    options = ["--rsh", RSH, "--store-host", bed.switch_address, "--host", f"{h0}:1,{h1}:1", "-n", "2"]
    command = [*RMARUN, *options, "--stdin", str(reader), "-c", STDIN_READER, str(reader)]
    env = dict(os.environ, **bed.rsh_environment())
    result = subprocess.run(command, input="hello\n", capture_output=True, text=True, timeout=WAIT, env=env)
    assert result.returncode == 0, result.stderr
    rows = sorted(line.split() for line in result.stdout.splitlines())
    assert rows == [[str(rank), host, "hello" if rank == reader else "None"] for rank, host in enumerate((h0, h1))]


def test_hostfile_gives_the_slots_and_the_number_of_ranks(bed, tmp_path):
    h0, h1 = (host.name for host in bed.hosts)
    hostfile = tmp_path / "hosts"
    hostfile.write_text(f"# the test bed\n{h0} slots=1\n\n{h1} slots=2  # two here\n")
    code = "import socket, rma; c = rma.init(); print(c.rank, c.size, socket.gethostname())"
    result = run(bed, "--hostfile", str(hostfile), code=code)
    assert result.returncode == 0, result.stderr
    rows = sorted(line.split() for line in result.stdout.splitlines())
    assert rows == [["0", "3", h0], ["1", "3", h1], ["2", "3", h1]]


def test_tagged_output_from_every_host(bed):
    h0, h1 = (host.name for host in bed.hosts)
    code = "import sys, rma; c = rma.init(); print('out', c.rank); print('err', c.rank, file=sys.stderr)"
    result = run(bed, "--host", f"{h0},{h1}", "--tag-output", code=code)
    assert result.returncode == 0, result.stderr
    assert sorted(result.stdout.splitlines()) == ["[0] out 0", "[1] out 1"]
    assert sorted(line for line in result.stderr.splitlines() if " err " in line) == ["[0] err 0", "[1] err 1"]


def test_a_failing_rank_on_another_host_stops_every_host(bed):
    h0, h1 = (host.name for host in bed.hosts)
    marker = f"marker-{uuid.uuid4().hex}"
    # The others sleep, so that rank 3 is the first to fail (ranks blocked in a call for it would
    # fail with PeerError, possibly before its own exit reaches rmarun through the remote shell).
    code = f"import rma, time; '{marker}'; c = rma.init(); time.sleep(0.3); time.sleep(120) if c.rank != 3 else 1 / 0"
    started = time.monotonic()
    result = run(bed, "--host", f"{h0}:2,{h1}:2", code=code)
    assert result.returncode == 1
    assert time.monotonic() - started < 30
    assert "ZeroDivisionError" in result.stderr
    assert f"rmarun: rank 3 on {h1} failed (exit status 1)" in result.stderr
    assert gone_soon(marker) == []


def test_ctrl_c_stops_the_ranks_on_every_host(bed):
    h0, h1 = (host.name for host in bed.hosts)
    marker = f"marker-{uuid.uuid4().hex}"
    code = f"import rma, time; '{marker}'; c = rma.init(); c.barrier(); print('ready', flush=True); time.sleep(600)"
    env = dict(os.environ, **bed.rsh_environment())
    command = [*RMARUN, "--rsh", RSH, "--store-host", bed.switch_address, "--host", f"{h0}:2,{h1}:1", "-c", code]
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True, start_new_session=True
    ) as proc:
        try:
            ready = 0
            while ready < 3:
                line = proc.stdout.readline()
                assert line, proc.stderr.read()
                ready += line.strip() == "ready"
            proc.send_signal(signal.SIGINT)
            _, err = proc.communicate(timeout=30)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.communicate()
    assert proc.returncode == 130, err
    assert "got SIGINT; stopping all ranks" in err
    assert gone_soon(marker) == []


def test_an_unknown_host_is_named(bed):
    h0 = bed.hosts[0].name
    result = run(bed, "--host", f"{h0},nosuchhost", code="import rma; rma.init()", timeout=60)
    assert result.returncode == 2
    # One line, before any rank started: which host, through what, and the remote shell's words.
    assert result.stderr.startswith(f"rmarun: cannot run {sys.executable} on host nosuchhost through `{RSH}`")
    assert "(exit status 255: " in result.stderr and "unknown host nosuchhost" in result.stderr
    assert len(result.stderr.splitlines()) == 1, result.stderr


def test_a_host_whose_python_has_no_rma_is_named(bed):
    # Debian's own Python has no rma (it is in the project's virtual environment only).
    python = "/usr/bin/python3"
    if not os.path.exists(python) or subprocess.run([python, "-c", "import rma"], capture_output=True).returncode == 0:
        pytest.skip(f"needs a Python without rma at {python}")
    h0, h1 = (host.name for host in bed.hosts)
    options = ["--rsh", RSH, "--store-host", bed.switch_address, "--host", f"{h0},{h1}"]
    env = dict(os.environ, **bed.rsh_environment())
    result = run_in_own_group([*RMARUN, *options, python, "-c", "import rma; rma.init()"], timeout=WAIT, env=env)
    assert result.returncode == 2
    assert result.stderr == f"rmarun: host {h0} has no rma for {python} (No module named 'rma'): install it there\n"


def test_the_store_address_needs_a_host_that_resolves(bed):
    h0 = bed.hosts[0].name  # (the test bed's names are known to its remote shell only)
    result = run(bed, "--host", f"{h0}:1", code="import rma; rma.init()", store_host=False, timeout=30)
    assert result.returncode == 2
    assert f"cannot choose the store's address: host {h0} does not resolve here" in result.stderr
    assert "--store-host" in result.stderr


# ---- the host lists themselves (no test bed) ----


def test_host_lists_and_placement():
    assert parse_host_list("a:2,b,a:1") == [Host("a", 3), Host("b", 1)]
    assert place([Host("a", 2), Host("b", 2)], 3) == ["a", "a", "b"]
    with pytest.raises(HostError, match=r"5 ranks do not fit the 4 slot\(s\) of the hosts \(a:2,b:2\)"):
        place([Host("a", 2), Host("b", 2)], 5)
    with pytest.raises(HostError, match="slots must be at least 1, not 0"):
        parse_host_list("a:0")
    with pytest.raises(HostError, match="an empty host name"):
        parse_host_list("a,,b")


def test_hostfile_errors_name_the_line(tmp_path):
    hostfile = tmp_path / "hosts"
    hostfile.write_text("a slots=2\nb cpus=4\n")
    with pytest.raises(HostError, match=r"hosts:2: expected `host slots=N`, found 'cpus=4'"):
        parse_hostfile(str(hostfile))
    with pytest.raises(HostError, match="No such file"):
        parse_hostfile(str(tmp_path / "missing"))


def test_rmarun_refuses_more_ranks_than_slots():
    result = subprocess.run(
        [*RMARUN, "--host", "localhost:2", "-n", "3", "-c", "pass"], capture_output=True, text=True, timeout=WAIT
    )
    assert result.returncode == 2
    assert "rmarun: 3 ranks do not fit the 2 slot(s) of the hosts (localhost:2)" in result.stderr


def test_local_hosts_start_without_the_remote_shell():
    # localhost is this machine: no remote shell (a failing one would make the job fail).
    code = "import os; print(os.environ['RMA_RANK'])"
    result = subprocess.run(
        [*RMARUN, "--host", "localhost:2", "--rsh", "false", "-c", code], capture_output=True, text=True, timeout=WAIT
    )
    assert result.returncode == 0, result.stderr
    assert sorted(result.stdout.split()) == ["0", "1"]


def test_ranks_of_different_rma_versions_are_refused(bed):
    # Rank 1 (on the other host) as if another release were installed there.
    h0, h1 = (host.name for host in bed.hosts)
    code = "import os, rma; rma.__version__ = '9.9.9' if os.environ['RMA_RANK'] == '1' else rma.__version__; rma.init()"
    result = run(bed, "--host", f"{h0},{h1}", code=code, timeout=60)
    assert result.returncode == 1
    assert f"rank 1 on {h1} runs 9.9.9" in result.stderr
    assert "the ranks run different versions of rma" in result.stderr
