"""Issue 40: mpiexec's habits in rmarun. Standard input reaches rank 0 (or the ranks --stdin
names) and never holds a job up; --oversubscribe and -np are taken as mpiexec takes them; and
MPI.Wtime() of the facade reads one clock in every rank of a host."""

import os
import pty
import select
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from rma.launcher.hosts import HostError, refuse_remote_stdin
from rma.launcher.stdin_relay import StdinRelay

WAIT = 20.0
RMARUN = [sys.executable, "-m", "rma"]
SHOW_INPUT = "import os, sys; print(os.environ['RMA_RANK'], repr(sys.stdin.read()))"


def rmarun(*args, stdin=None, input=None, timeout=WAIT):
    """rmarun with args, reading `input` (bytes) or the file `stdin`; the CompletedProcess."""
    with subprocess.Popen(
        [*RMARUN, *args],
        stdin=subprocess.PIPE if input is not None else stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    ) as proc:
        try:
            out, err = proc.communicate(input, timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise
    return subprocess.CompletedProcess(proc.args, proc.returncode, out.decode(), err.decode())


def lines(result):
    return sorted(result.stdout.splitlines())


def test_input_goes_to_rank_0_and_the_others_read_nothing():
    result = rmarun("-n", "3", "-c", SHOW_INPUT, input=b"10\n")
    assert result.returncode == 0, result.stderr
    assert lines(result) == ["0 '10\\n'", "1 ''", "2 ''"]
    # mpiexec's own example: input() on every rank, only rank 0 has a line to read. The others
    # meet EOFError; they report it and end well, because a rank that fails stops the job, and
    # rank 0 could be stopped before it prints (seen under AddressSanitizer's slow start).
    code = textwrap.dedent(
        """
        import os, sys
        try:
            print(input())
        except EOFError:
            print(os.environ["RMA_RANK"], "EOFError", file=sys.stderr)
        """
    )
    result = rmarun("-n", "2", "python", "-c", code, input=b"10\n")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["10"] and "1 EOFError" in result.stderr


@pytest.mark.parametrize(
    "choice, expected",
    [
        ("1", ["0 ''", "1 'a\\nb\\n'", "2 ''"]),
        ("all", ["0 'a\\nb\\n'", "1 'a\\nb\\n'", "2 'a\\nb\\n'"]),
        ("none", ["0 ''", "1 ''", "2 ''"]),
    ],
)
def test_stdin_chooses_the_ranks_that_read_it(choice, expected):
    result = rmarun("-n", "3", "--stdin", choice, "-c", SHOW_INPUT, input=b"a\nb\n")
    assert result.returncode == 0, result.stderr
    assert lines(result) == expected


def test_stdin_all_copies_a_large_input_to_every_rank():
    data = os.urandom(1 << 20)
    code = "import hashlib, os, sys; print(os.environ['RMA_RANK'], hashlib.sha1(sys.stdin.buffer.read()).hexdigest())"
    result = rmarun("-n", "2", "--stdin", "all", "-c", code, input=data)
    assert result.returncode == 0, result.stderr
    import hashlib

    digest = hashlib.sha1(data).hexdigest()
    assert lines(result) == [f"0 {digest}", f"1 {digest}"]


def test_a_rank_that_does_not_read_holds_no_other_up(tmp_path):
    # Rank 0 reads nothing until rank 1 has read 1 MiB (16 pipes' worth): each rank's copy has
    # its own writer.
    flag = tmp_path / "read"
    code = textwrap.dedent(
        f"""
        import os, sys, time
        if os.environ["RMA_RANK"] == "1":
            print(len(sys.stdin.buffer.read()), flush=True)
            open({str(flag)!r}, "w").close()
        else:
            while not os.path.exists({str(flag)!r}):
                time.sleep(0.01)
        """
    )
    result = rmarun("-n", "2", "--stdin", "all", "-c", code, input=b"x" * (1 << 20))
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [str(1 << 20)]


@pytest.mark.parametrize("choice", ["0", "all"])
def test_input_that_never_ends_holds_up_neither_the_job_nor_rmarun(choice):
    # The input stays open, 1 MiB waiting in it, and no rank reads: rmarun ends with its ranks.
    reader, writer = os.pipe()
    os.set_blocking(writer, False)
    try:
        try:
            while True:
                os.write(writer, b"y" * 65536)
        except BlockingIOError:
            pass
        start = time.monotonic()
        result = rmarun("-n", "2", "--stdin", choice, "-c", "print('done')", stdin=reader)
        assert result.returncode == 0, result.stderr
        assert result.stdout.split() == ["done", "done"]
        assert time.monotonic() - start < 10
    finally:
        os.close(reader)
        os.close(writer)


def test_ctrl_c_stops_a_job_whose_ranks_wait_for_input():
    reader, writer = os.pipe()
    try:
        with subprocess.Popen(
            [*RMARUN, "-n", "2", "--stdin", "all", "-c", "import sys; print('up', flush=True); sys.stdin.read()"],
            stdin=reader,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        ) as proc:
            assert proc.stdout.readline() == b"up\n"
            assert proc.stdout.readline() == b"up\n"
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                raise
            assert proc.returncode == 130
    finally:
        os.close(reader)
        os.close(writer)


def test_the_only_reader_reads_rmaruns_own_input_a_terminal_stays_one():
    # One reader gets rmarun's input itself (a terminal: input() edits lines); the others get
    # /dev/null; several readers read a copy through pipes.
    code = "import os; print(os.environ['RMA_RANK'], os.isatty(0), os.path.realpath('/proc/self/fd/0') == '/dev/null')"
    leader, follower = pty.openpty()
    try:
        result = rmarun("-n", "2", "--stdin", "1", "-c", code, stdin=follower)
        assert lines(result) == ["0 False True", "1 True False"]
        result = rmarun("-n", "2", "--stdin", "all", "-c", code, stdin=follower)
        assert lines(result) == ["0 False False", "1 False False"]
    finally:
        os.close(leader)
        os.close(follower)


def test_stdin_choices_that_name_no_rank_are_refused():
    for choice in ("2", "-1", "some"):
        result = rmarun("-n", "2", "--stdin", choice, "-c", "1")
        assert result.returncode == 2
        assert result.stderr == f"rmarun: --stdin {choice}: expected all, none or a rank from 0 to 1\n"


def read_within(fd, seconds):
    """What fd has to read within `seconds`, or None."""
    ready, _, _ = select.select([fd], [], [], seconds)
    return os.read(fd, 100) if ready else None


def test_the_relay_stops_reading_with_the_job():
    # (rmarun may be called in a process that lives on: its input is not the relay's after the job.)
    source, feed = os.pipe()
    target_reader, target_writer = os.pipe()
    saved = os.dup(0)
    os.dup2(source, 0)
    try:
        relay = StdinRelay()
        relay.add(os.fdopen(target_writer, "wb"))
        relay.start()
        os.write(feed, b"job's")
        assert read_within(target_reader, 5) == b"job's"
        relay.stop()
        assert read_within(target_reader, 5) == b""  # the rank's copy ends with the job
        os.write(feed, b"later")
        time.sleep(0.5)
        assert read_within(0, 1) == b"later"
    finally:
        os.dup2(saved, 0)
        for fd in (saved, source, feed, target_reader):
            os.close(fd)


def test_an_ssh_that_reads_no_input_is_refused_for_a_remote_reader():
    placement = ["localhost", "far-host"]
    refuse_remote_stdin("ssh -n", placement, [0])  # (rank 0 is local: ssh does not carry it)
    refuse_remote_stdin("ssh -p 22 -o BatchMode=yes", placement, [1])
    refuse_remote_stdin("ssh -p n", placement, [1])  # (n is -p's value)
    refuse_remote_stdin("my-rsh -n", placement, [1])  # (not ssh: its -n may mean anything)
    for rsh in ("ssh -n", "ssh -x -nT", "/usr/bin/ssh -f", "ssh -p 2222 -n"):
        with pytest.raises(HostError, match=r"--stdin: rank 1 runs on far-host through .*, whose -[nf] gives it no"):
            refuse_remote_stdin(rsh, placement, [0, 1])
    result = rmarun("--host", "far-host:2", "--store-host", "127.0.0.1", "--rsh", "ssh -n", "--stdin", "1", "-c", "1")
    assert result.returncode == 2 and "rmarun: --stdin: rank 1 runs on far-host" in result.stderr


def test_oversubscribe_and_np_as_mpiexec_takes_them():
    ranks = len(os.sched_getaffinity(0)) + 2  # more ranks than cores
    result = rmarun("--oversubscribe", "-np", str(ranks), "-c", "import os; print(os.environ['RMA_SIZE'])")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [str(ranks)] * ranks
    help_text = rmarun("--help").stdout
    assert "--oversubscribe" in help_text and "--stdin all|none|RANK" in help_text


WTIME = textwrap.dedent(
    """
    import os, time
    time.sleep(0.3 * int(os.environ["RMA_RANK"]))  # the ranks start their clocks apart, if they have their own
    from rma.compat import MPI

    world = MPI.COMM_WORLD
    spreads = []
    for _ in range(10):
        world.Barrier()
        now = world.allgather(MPI.Wtime())
        spreads.append(max(now) - min(now))
    if world.Get_rank() == 0:
        print(min(spreads), MPI.Wtick())
    """
)


@pytest.mark.parametrize("size", [2, 4])
def test_wtime_agrees_across_the_ranks_of_a_host(size):
    result = rmarun("-n", str(size), "-c", WTIME, timeout=60)
    assert result.returncode == 0, result.stderr
    spread, tick = map(float, result.stdout.split())
    assert spread < 0.005 and 0 < tick <= 1e-6
