"""Test rmarun (rma.launcher) by running it on real rank processes.

The rank programs here use only os.environ and the standard library, never
rma itself, so these tests do not depend on the compiled core.  Every
launcher run has a timeout; on expiry the launcher is stopped and the test
fails instead of hanging.
"""

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from rma._job.shm_files import cleanup_shm_files
from rma.launcher.cli import build_command, split_argv
from tcp_provider import tcp_provider_opened

WAIT = 15.0
RMARUN = [sys.executable, "-m", "rma"]


def rmarun(*args, timeout=WAIT, cwd=None, env=None):
    """Run rmarun with args; return the CompletedProcess with text output."""
    with subprocess.Popen(
        [*RMARUN, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        cwd=cwd,
        env=env,
        # Its own group, so that a hung run can be stopped as a whole.
        start_new_session=True,
    ) as proc:
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            stop_launcher(proc)
            raise
        return subprocess.CompletedProcess(proc.args, proc.returncode, out.decode(), err.decode())


def stop_launcher(proc):
    """Stop a launcher that overran: SIGTERM lets it take its ranks down too."""
    proc.send_signal(signal.SIGTERM)
    try:
        proc.communicate(timeout=6)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()


def alive(pid):
    """Tell whether process pid still exists (a zombie counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def assert_all_gone(pids, within=5.0):
    deadline = time.monotonic() + within
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert [p for p in pids if alive(p)] == []


def read_pids(directory, count, within=WAIT):
    """Wait until `count` pid files exist in directory; return the pids."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        names = [n for n in os.listdir(directory) if n.endswith(".pid")]
        if len(names) >= count:
            pids = []
            for name in names:
                with open(os.path.join(directory, name)) as f:
                    text = f.read()
                if not text.endswith("\n"):
                    break  # still being written
                pids.append(int(text))
            else:
                return pids
        time.sleep(0.01)
    raise AssertionError(f"only {os.listdir(directory)} appeared in {directory}")


# A rank program that records its pid (and that of a child it spawns, to
# check that rmarun kills whole process trees), then behaves per rank.
RANK_PROGRAM = textwrap.dedent(
    """
    import os, signal, subprocess, sys, time
    rank = int(os.environ["RMA_RANK"])
    size = int(os.environ["RMA_SIZE"])
    piddir = sys.argv[1]
    behaviour = dict(arg.split("=", 1) for arg in sys.argv[2:])

    def record(name, pid):
        with open(os.path.join(piddir, name + ".tmp"), "w") as f:
            f.write(f"{pid}\\n")
        os.rename(os.path.join(piddir, name + ".tmp"), os.path.join(piddir, name + ".pid"))

    if behaviour.get("ignore") == str(rank):
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    record(f"child{rank}", child.pid)
    record(f"rank{rank}", os.getpid())
    action = behaviour.get(str(rank), "sleep")
    if action != "sleep":
        # Act only once every rank is up, so that all pids are known.
        while len([n for n in os.listdir(piddir) if n.endswith(".pid")]) < 2 * size:
            time.sleep(0.01)
    if action.startswith("exit"):
        print(f"rank {rank} exiting", flush=True)
        os._exit(int(action[4:]))
    if action == "raise":
        raise RuntimeError(f"distinctive failure of rank {rank}")
    if action == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    if action == "done":
        child.kill()
        child.wait()
        sys.exit(0)
    time.sleep(60)
    """
)


@pytest.fixture
def rank_program(tmp_path):
    """Return (script path, pid directory) for RANK_PROGRAM."""
    script = tmp_path / "rank.py"
    script.write_text(RANK_PROGRAM)
    piddir = tmp_path / "pids"
    piddir.mkdir()
    return str(script), str(piddir)


# --------------------------------------------------------------------------
# the command line


def test_split_argv_gives_everything_after_the_program_to_it():
    assert split_argv(["-n", "2", "x.py", "--foo", "-n", "3"]) == (
        ["-n", "2"],
        ["x.py", "--foo", "-n", "3"],
        "program",
    )
    assert split_argv(["-n", "2", "-m", "mod", "-c", "x"]) == (["-n", "2"], ["mod", "-c", "x"], "-m")
    assert split_argv(["-n2", "--tag-output", "-c", "print(1)", "a"]) == (
        ["-n2", "--tag-output"],
        ["print(1)", "a"],
        "-c",
    )
    assert split_argv(["-n", "2", "--", "-weird"]) == (["-n", "2"], ["-weird"], "program")
    assert split_argv(["--provider", "tcp;ofi_rxm", "-n", "1", "python", "-c", "1"]) == (
        ["--provider", "tcp;ofi_rxm", "-n", "1"],
        ["python", "-c", "1"],
        "program",
    )
    assert split_argv(["--info"]) == (["--info"], None, None)
    assert split_argv(["-np", "2", "x.py", "-np"]) == (["-np", "2"], ["x.py", "-np"], "program")


def test_np_works_as_in_mpiexec():
    result = rmarun("-np", "3", "-c", "import rma; comm = rma.init(); print(comm.size)")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["3", "3", "3"]


def test_build_command(tmp_path):
    script = tmp_path / "s.py"
    script.write_text("")
    assert build_command("program", [str(script), "a"]) == [sys.executable, str(script), "a"]
    assert build_command("-m", ["mod", "a"]) == [sys.executable, "-m", "mod", "a"]
    assert build_command("-c", ["code"]) == [sys.executable, "-c", "code"]
    assert build_command("program", ["sh", "-c", "true"]) == ["sh", "-c", "true"]
    with pytest.raises(FileNotFoundError):
        build_command("program", ["no-such-program-for-rmarun"])


def test_usage_errors(tmp_path):
    assert rmarun("-c", "print(1)").returncode == 2  # no -n
    result = rmarun("-n", "2")
    assert result.returncode == 2 and "nothing to run" in result.stderr
    assert rmarun("-n", "0", "-c", "1").returncode == 2
    result = rmarun("-n", "2", str(tmp_path / "missing.py"))
    assert result.returncode == 127 and "no such file" in result.stderr
    result = rmarun("-n", "2", "no-such-program-for-rmarun")
    assert result.returncode == 127 and "command not found" in result.stderr


def test_info_says_which_transport_a_job_would_use(monkeypatch):
    monkeypatch.delenv("RMA_TRANSPORT", raising=False)
    monkeypatch.delenv("RMA_PROVIDER", raising=False)
    result = rmarun("--info")
    assert result.stdout.startswith("rma ")
    assert "between the ranks of one host (RMA_TRANSPORT=auto): shared memory" in result.stdout
    assert "a job with all ranks on this host: no libfabric" in result.stdout
    opened = tcp_provider_opened()
    opens = f", which opens {opened}" if opened != "tcp" else ""
    assert f"a job with ranks on several hosts: libfabric provider tcp (automatic){opens}\n" in result.stdout
    monkeypatch.setenv("RMA_TRANSPORT", "libfabric")
    result = rmarun("--info")
    assert "(RMA_TRANSPORT=libfabric): libfabric for windows and messages" in result.stdout
    assert "a job with all ranks on this host: libfabric provider shm" in result.stdout


# --------------------------------------------------------------------------
# running jobs


def test_ranks_get_their_environment():
    code = (
        "import os; e = os.environ; "
        "print(e['RMA_RANK'], e['RMA_SIZE'], e['RMA_LAUNCHER'], e['PYTHONUNBUFFERED'], "
        "e['RMA_PROVIDER'], bool(e['RMA_SECRET']), e['RMA_STORE'].startswith('127.0.0.1:'))"
    )
    start = time.monotonic()
    result = rmarun("-n", "4", "--provider", "tcp;ofi_rxm", "-c", code)
    assert result.returncode == 0, result.stderr
    assert sorted(result.stdout.splitlines()) == [f"{r} 4 rmarun 1 tcp;ofi_rxm True True" for r in range(4)]
    assert result.stderr == ""
    assert time.monotonic() - start < 5


@pytest.mark.parametrize("ranks", [1, 2, 3, 4])
def test_ranks_share_the_cores_among_their_thread_pools(ranks):
    # Unless the user sized them, each rank's OpenMP and BLAS threads get the rank's share of
    # this host's cores (at least one); a user's own setting of any of them is left alone.
    cores = len(os.sched_getaffinity(0))
    code = "import os; print(os.environ.get('OMP_NUM_THREADS'), os.environ.get('OPENBLAS_NUM_THREADS'))"
    env = {k: v for k, v in os.environ.items() if not k.endswith("_NUM_THREADS")}
    result = rmarun("-n", str(ranks), "-c", code, env=env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [f"{max(1, cores // ranks)} None"] * ranks
    for mine in ({"OMP_NUM_THREADS": "3"}, {"OPENBLAS_NUM_THREADS": "5"}):
        result = rmarun("-n", str(ranks), "-c", code, env={**env, **mine})
        assert result.returncode == 0, result.stderr
        expected = f"{mine.get('OMP_NUM_THREADS')} {mine.get('OPENBLAS_NUM_THREADS')}"
        assert result.stdout.splitlines() == [expected] * ranks


def test_tag_output_prefixes_every_line():
    code = (
        "import os, sys; r = os.environ['RMA_RANK']; "
        "print('a' + r); print('b' + r, file=sys.stderr); sys.stdout.write('no-newline' + r)"
    )
    result = rmarun("-n", "3", "--tag-output", "-c", code)
    assert result.returncode == 0, result.stderr
    assert sorted(result.stdout.splitlines()) == sorted(
        [f"[{r}] a{r}" for r in range(3)] + [f"[{r}] no-newline{r}" for r in range(3)]
    )
    assert sorted(result.stderr.splitlines()) == [f"[{r}] b{r}" for r in range(3)]


def test_output_is_relayed_as_bytes_without_tags():
    code = "import sys; sys.stdout.buffer.write(b'\\xff\\xfe binary\\n'); sys.stdout.buffer.write(b'tail')"
    with subprocess.Popen([*RMARUN, "-n", "1", "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE) as proc:
        out, err = proc.communicate(timeout=WAIT)
    assert proc.returncode == 0, err
    assert out == b"\xff\xfe binary\ntail"


def test_script_arguments_reach_the_script(tmp_path):
    script = tmp_path / "show_args.py"
    script.write_text("import sys; print(sys.argv[1:])\n")
    result = rmarun("-n", "2", str(script), "--foo", "-n", "3", "--tag-output")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["['--foo', '-n', '3', '--tag-output']"] * 2


def test_module_form(tmp_path):
    (tmp_path / "rmarun_test_mod.py").write_text("import os, sys; print('mod', os.environ['RMA_RANK'], sys.argv[1:])\n")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(tmp_path), env.get("PYTHONPATH")]))
    result = rmarun("-n", "2", "-m", "rmarun_test_mod", "x", "-n", "9", env=env)
    assert result.returncode == 0, result.stderr
    assert sorted(result.stdout.splitlines()) == ["mod 0 ['x', '-n', '9']", "mod 1 ['x', '-n', '9']"]


def test_code_form_with_arguments():
    result = rmarun("-n", "2", "-c", "import sys; print(sys.argv[1:])", "a", "--b")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["['a', '--b']"] * 2


def test_non_python_program():
    result = rmarun("-n", "3", "sh", "-c", 'echo "rank=$RMA_RANK of $RMA_SIZE"')
    assert result.returncode == 0, result.stderr
    assert sorted(result.stdout.splitlines()) == [f"rank={r} of 3" for r in range(3)]


def test_python_program_given_by_name():
    result = rmarun("-n", "2", sys.executable, "-c", "import os; print(os.environ['RMA_RANK'])")
    assert result.returncode == 0, result.stderr
    assert sorted(result.stdout.split()) == ["0", "1"]


def test_failing_rank_stops_the_others(rank_program):
    script, piddir = rank_program
    start = time.monotonic()
    result = rmarun("-n", "4", script, piddir, "2=exit3")
    elapsed = time.monotonic() - start
    assert result.returncode == 3, result.stderr
    assert elapsed < 10
    assert "rmarun: rank 2 failed (exit status 3); stopping the other ranks" in result.stderr
    assert "rank 2 exiting" in result.stdout
    # Only the rank that failed on its own is reported, not those stopped.
    assert result.stderr.count(" failed (") == 1
    pids = read_pids(piddir, 8, within=1)
    assert len(pids) == 8
    assert_all_gone(pids)


def test_traceback_without_rma_is_repeated_under_its_rank(rank_program):
    script, piddir = rank_program  # a program that never calls rma.init()
    result = rmarun("-n", "3", script, piddir, "1=raise")
    assert result.returncode == 1
    summary = result.stderr.split("rmarun: rank 1 failed (exit status 1)", 1)
    assert len(summary) == 2, result.stderr
    # The traceback is relayed live, and repeated under the rank number.
    assert "RuntimeError: distinctive failure of rank 1" in summary[0]
    tail = summary[1].split("---- rank 1 stderr (last lines) ----", 1)[1]
    assert "Traceback (most recent call last):" in tail
    assert "RuntimeError: distinctive failure of rank 1" in tail
    assert_all_gone(read_pids(piddir, 6, within=1))


def test_a_rma_ranks_traceback_appears_once_under_its_label():
    code = "import rma\ncomm = rma.init()\nif comm.rank == 1:\n    raise ValueError('only once')\ncomm.barrier()\n"
    result = rmarun("-n", "3", "-c", code)
    assert result.returncode == 1
    assert result.stderr.count("ValueError: only once") == 1, result.stderr
    label = result.stderr.index("rma: rank 1 ended with an uncaught exception:")
    assert label < result.stderr.index("[rank 1] Traceback (most recent call last):")
    assert "[rank 1] ValueError: only once" in result.stderr
    assert "rmarun: rank 1 failed (exit status 1); stopping the other ranks (its traceback is above)" in result.stderr


def test_timeout_shows_where_each_rma_rank_stood(tmp_path):
    # Rank 2 never comes to the barrier: rmarun's timeout interrupts every rank, and each shows
    # its traceback under its label: ranks 0 and 1 in the barrier, rank 2 in its sleep.
    script = tmp_path / "late.py"
    script.write_text("import time, rma\ncomm = rma.init()\nif comm.rank == 2:\n    time.sleep(60)\ncomm.barrier()\n")
    start = time.monotonic()
    result = rmarun("-n", "3", "--timeout", "2", str(script))
    assert result.returncode == 124, result.stderr
    assert time.monotonic() - start < 10
    assert "ranks still running: 0, 1, 2; interrupting them" in result.stderr
    for rank in range(3):
        assert f"rma: rank {rank} ended with an uncaught exception:" in result.stderr
        shown = [line for line in result.stderr.splitlines() if line.startswith(f"[rank {rank}] ")]
        assert shown[0] == f"[rank {rank}] Traceback (most recent call last):", result.stderr
        assert shown[-1] == f"[rank {rank}] KeyboardInterrupt", result.stderr
        assert f"[rank {rank}]     {'time.sleep(60)' if rank == 2 else 'comm.barrier()'}" in shown, result.stderr


def test_ctrl_c_shows_where_each_rma_rank_stood(tmp_path):
    # As the timeout above, by SIGINT to rmarun (a Ctrl-C on its terminal): rmarun forwards it,
    # and each rank shows its traceback under its label before the job ends with 130.
    script = tmp_path / "late.py"
    script.write_text(
        "import time, rma\ncomm = rma.init()\nprint('in', flush=True)\n"
        "if comm.rank == 2:\n    time.sleep(60)\ncomm.barrier()\n"
    )
    with subprocess.Popen(
        [*RMARUN, "-n", "3", str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,
    ) as proc:  # fmt: skip
        try:
            for _ in range(3):  # every rank past rma.init()
                assert proc.stdout.readline() == "in\n"
            time.sleep(0.5)  # ranks 0 and 1 in the barrier
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=15)
        except BaseException:
            stop_launcher(proc)
            raise
    assert proc.returncode == 130, err
    assert "got SIGINT; stopping all ranks" in err
    for rank in range(3):
        shown = [line for line in err.splitlines() if line.startswith(f"[rank {rank}] ")]
        assert shown and shown[0] == f"[rank {rank}] Traceback (most recent call last):", err
        assert shown[-1] == f"[rank {rank}] KeyboardInterrupt", err
        assert f"[rank {rank}]     {'time.sleep(60)' if rank == 2 else 'comm.barrier()'}" in shown, err


def test_rank_killed_by_a_signal(rank_program):
    script, piddir = rank_program
    result = rmarun("-n", "2", script, piddir, "0=kill")
    assert result.returncode == 128 + signal.SIGKILL
    assert "rank 0 failed (killed by SIGKILL)" in result.stderr
    assert_all_gone(read_pids(piddir, 4, within=1))


def test_late_failure_after_others_finished(rank_program):
    script, piddir = rank_program
    result = rmarun("-n", "3", script, piddir, "0=done", "2=done", "1=exit7")
    assert result.returncode == 7
    assert "rank 1 failed (exit status 7)" in result.stderr
    assert_all_gone(read_pids(piddir, 6, within=1))


def test_success_leaves_no_children_behind(rank_program):
    # The ranks exit 0 but leave a sleeping child each: rmarun kills them.
    script, piddir = rank_program
    code = textwrap.dedent(
        f"""
        import os, subprocess, sys
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        with open(os.path.join({piddir!r}, os.environ["RMA_RANK"] + ".pid"), "w") as f:
            f.write(f"{{child.pid}}\\n")
        """
    )
    result = rmarun("-n", "2", "-c", code)
    assert result.returncode == 0, result.stderr
    assert_all_gone(read_pids(piddir, 2, within=1))


def test_timeout_names_running_ranks(rank_program):
    script, piddir = rank_program
    start = time.monotonic()
    result = rmarun("-n", "4", "--timeout", "1", script, piddir, "2=done")
    assert result.returncode == 124, result.stderr
    assert time.monotonic() - start < 8
    assert "rmarun: timeout after 1 s; ranks still running: 0, 1, 3" in result.stderr
    assert " failed (" not in result.stderr
    assert_all_gone(read_pids(piddir, 8, within=1))


@pytest.mark.parametrize("sig, status", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_signal_to_rmarun_stops_every_rank(rank_program, sig, status):
    script, piddir = rank_program
    # Rank 1 ignores SIGINT and SIGTERM: it must still go, by SIGKILL.
    with subprocess.Popen(
        [*RMARUN, "-n", "3", script, piddir, "ignore=1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    ) as proc:
        try:
            pids = read_pids(piddir, 6)
            start = time.monotonic()
            proc.send_signal(sig)
            out, err = proc.communicate(timeout=10)
        except BaseException:
            stop_launcher(proc)
            raise
    assert proc.returncode == status, err.decode()
    assert time.monotonic() - start < 6
    assert f"got {signal.Signals(sig).name}" in err.decode()
    assert_all_gone(pids)


@pytest.mark.skipif(not os.path.isdir("/dev/shm"), reason="needs /dev/shm")
def test_shm_leftovers_of_ranks_are_removed():
    code = (
        "import os; open(f'/dev/shm/{os.getpid()}:rmarun-test', 'w').close(); "
        "print(os.getpid()); os._exit(int(os.environ['RMA_RANK']))"
    )
    result = rmarun("-n", "2", "-c", code)
    assert result.returncode == 1
    for pid in result.stdout.split():
        assert not os.path.exists(f"/dev/shm/{pid}:rmarun-test")


def test_cleanup_shm_files_matches_only_the_given_pids(tmp_path):
    names = ["1234:0:0", "1234_x", "12345:0", "1234", "123:0", "fi_1234", "999:1"]
    names += ["rma-1234-0", "rma-12345-1", "rma-1234", "rma-x-1234-0", "rma-999-12"]
    for name in names:
        (tmp_path / name).write_text("")
    removed = cleanup_shm_files([1234, 999], shm_dir=str(tmp_path))
    assert sorted(removed) == sorted(["1234:0:0", "1234_x", "999:1", "rma-1234-0", "rma-999-12"])
    assert sorted(os.listdir(tmp_path)) == sorted(
        ["1234", "123:0", "12345:0", "fi_1234", "rma-12345-1", "rma-1234", "rma-x-1234-0"]
    )
    # It never raises, whatever it is given.
    assert cleanup_shm_files([1], shm_dir=str(tmp_path / "nonexistent")) == []
    assert cleanup_shm_files([]) == []


def test_a_new_rank_removes_segment_names_left_by_a_killed_one(tmp_path):
    # A rank killed between a shared window's creation and its barrier leaves "rma-<pid>-<n>".
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    left = f"/dev/shm/rma-{int(dead.stdout)}-3"
    mine = f"/dev/shm/rma-{os.getpid()}-900"  # alive: kept
    for path in (left, mine):
        with open(path, "w"):
            pass
    try:
        code = "import rma; rma.init(); rma.finalize()"
        result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, result.stderr
        assert not os.path.exists(left) and os.path.exists(mine)
    finally:
        for path in (left, mine):
            if os.path.exists(path):
                os.unlink(path)


# --------------------------------------------------------------------------
# --serve-store


STORE_RANK = textwrap.dedent(
    """
    import os, sys
    from rma._job.store_client import StoreClient
    rank = int(os.environ["RMA_RANK"])
    client = StoreClient(os.environ["RMA_STORE"], os.environ["RMA_SECRET"], rank, timeout=10)
    client.put(f"addr/{rank}", str(rank * 10).encode())
    size = int(os.environ["RMA_SIZE"])
    print(sorted(int(v) for v in client.get_many([f"addr/{r}" for r in range(size)])), flush=True)
    if sys.argv[1] == "die" and rank == 1:
        os._exit(0)  # leaves without saying bye
    client.close()
    """
)


@pytest.mark.parametrize("how, status", [("clean", 0), ("die", 1)])
def test_serve_store_for_ranks_started_by_hand(how, status):
    with subprocess.Popen(
        [*RMARUN, "--serve-store", "-n", "2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    ) as store:
        try:
            exports = {}
            while True:
                line = store.stdout.readline().decode()
                assert line, store.stderr.read().decode()
                if line.startswith("#"):
                    assert "RMA_RANK (0..1)" in line
                    break
                assert line.startswith("export ")
                key, value = line[len("export ") :].strip().split("=", 1)
                exports[key] = value
            assert set(exports) == {"RMA_STORE", "RMA_SECRET", "RMA_SIZE"}
            assert exports["RMA_SIZE"] == "2"
            ranks = [
                subprocess.Popen(
                    [sys.executable, "-c", STORE_RANK, how],
                    env=dict(os.environ, **exports, RMA_RANK=str(rank)),
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                )
                for rank in range(2)
            ]
            for rank in ranks:
                out, err = rank.communicate(timeout=WAIT)
                assert rank.returncode == 0, err.decode()
                assert out.decode().strip() == "[0, 10]"
            store.stdout.close()
            store.stderr.close()
            assert store.wait(timeout=WAIT) == status
        except BaseException:
            stop_launcher(store)
            raise
