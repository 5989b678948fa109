"""Joining a job: ranks started by hand (as srun or ssh would), the job secret, dead ranks,
deadlines, and the launcher's promises with the real core. Every job runs under a timeout."""

import os
import subprocess
import sys
import textwrap
import time

import pytest

import handmade_ranks
from handmade_ranks import finish
from rma._job.store_server import StoreServer

RANK_PROLOGUE = "import os, sys, time, rma\n"


def start_ranks(code, size, store, **options):
    """Start `size` ranks running `code` by hand (handmade_ranks.start_ranks), rma imported."""
    return handmade_ranks.start_ranks(code, size, store, prologue=RANK_PROLOGUE, **options)


@pytest.fixture
def store():
    server = StoreServer(size=3)
    server.start()
    yield server
    server.close()


@pytest.mark.parametrize("provider", ["shm", "tcp"])
def test_ranks_started_by_another_launcher_join(store, provider):
    code = """
        comm = rma.init()
        print(comm.rank, comm.allgather(comm.rank))
    """
    results = finish(start_ranks(code, 3, store, extra_env={"RMA_PROVIDER": provider}))
    for rank, (status, out, err) in enumerate(results):
        assert status == 0, err
        assert out.split(maxsplit=1) == [str(rank), "[0, 1, 2]\n"]
    assert store.ranks_finished() == {0, 1, 2}


def test_wrong_secret_is_refused(store):
    code = "rma.init()"
    processes = start_ranks(code, 1, store, secret="not-the-secret")
    ((status, _, err),) = finish(processes)
    assert status != 0
    assert "BootstrapError" in err and "wrong job secret" in err


def test_a_dead_rank_becomes_peer_error_not_a_hang(store):
    # Nobody kills the survivors here: they must notice on their own.
    assert_rank_2_death_ends("comm = rma.init()", "comm.barrier()", store)


@pytest.mark.parametrize("wait", ["fence", "wait"])
def test_a_dead_rank_ends_waits_in_shared_memory(store, wait):
    # A shared window's fence and PSCW wait sleep on a futex, not on messages: they must
    # still notice a rank that died.
    setup = f"""
        import numpy as np
        comm = rma.init()
        win = rma.Window.allocate(comm, 4, np.int64)
        assert win.transport == "shared-memory"
        if "{wait}" == "wait" and comm.rank != 2:
            win.post([2])
    """
    assert_rank_2_death_ends(setup, f"win.{wait}()", store)


def test_a_lock_holder_that_dies_ends_the_waits_for_its_lock(store):
    # Rank 2 dies holding rank 0's exclusive lock: the others wait for it in vain, and must
    # hear of the death rather than wait until RMA_TIMEOUT.
    setup = """
        import numpy as np
        comm = rma.init()
        win = rma.Window.allocate(comm, 1, np.int64)
        if comm.rank == 2:
            win.lock(0)
    """
    assert_rank_2_death_ends(setup, "win.lock(0)", store, named="win.lock to rank 0")


def assert_rank_2_death_ends(setup, call, store, named=None):
    """Rank 2 of 3 dies after `setup`; `call` on ranks 0 and 1 must raise PeerError naming it
    (and the call, as `named`) within 5 s."""
    ending = f"""
        comm.barrier()
        if comm.rank == 2:
            os._exit(3)
        start = time.monotonic()
        try:
            {call}
        except rma.PeerError as error:
            print(f"{{time.monotonic() - start:.2f}}", error)
            sys.exit(0)
        sys.exit(1)
    """
    code = textwrap.dedent(setup) + textwrap.dedent(ending)
    results = finish(start_ranks(code, 3, store, extra_env={"RMA_TIMEOUT": "60"}), timeout=30)
    assert results[2][0] == 3
    for status, out, err in results[:2]:
        assert status == 0, err
        seconds, message = out.split(maxsplit=1)
        assert float(seconds) < 5
        assert "rank 2 died" in message and (named or call.rstrip("()")) in message


def test_a_blocked_call_times_out_with_rma_timeout(store):
    code = """
        comm = rma.init()
        if comm.rank == 0:
            try:
                comm.recv(source=1, tag=5)
            except rma.RMATimeoutError as error:
                print(error)
        else:
            time.sleep(1.5)  # reach the barrier while rank 0 still waits, within their deadline
        comm.barrier()
    """
    processes = start_ranks(code, 3, store, extra_env={"RMA_TIMEOUT": "2"})
    results = finish(processes)
    status, out, err = results[0]
    assert status == 0, err
    assert "comm.recv" in out and "rank 1" in out and "RMA_TIMEOUT" in out


def test_ranks_must_agree_on_the_provider():
    server = StoreServer(size=2)
    server.start()
    try:
        providers = ["shm", "tcp"]
        processes = start_ranks("rma.init()", 2, server, extra_env=lambda rank: {"RMA_PROVIDER": providers[rank]})
        (status0, _, err0), (status1, _, err1) = finish(processes)
        assert status0 != 0 and status1 != 0
        assert "same RMA_PROVIDER" in err0 and "same RMA_PROVIDER" in err1
    finally:
        server.close()


def test_ranks_must_agree_on_the_transport():
    server = StoreServer(size=2)
    server.start()
    try:
        transports = ["auto", "libfabric"]
        processes = start_ranks("rma.init()", 2, server, extra_env=lambda rank: {"RMA_TRANSPORT": transports[rank]})
        for status, _, err in finish(processes):
            assert status != 0
            assert "BootstrapError" in err and "disagree on RMA_TRANSPORT (auto, libfabric)" in err
    finally:
        server.close()


def test_a_transport_setting_that_does_not_exist_stops_init():
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RMA_", "SLURM_", "PMI_", "OMPI_"))}
    env["RMA_TRANSPORT"] = "shm"
    out = subprocess.run(
        [sys.executable, "-c", "import rma; rma.init()"], env=env, capture_output=True, text=True, timeout=30
    )
    assert out.returncode != 0
    assert out.stderr == "rma: RMA_TRANSPORT='shm': use auto, shared-memory or libfabric\n"  # (tests/test_settings.py)


def test_plain_python_is_a_job_of_one_rank():
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RMA_", "SLURM_", "PMI_", "OMPI_"))}
    code = "import rma; c = rma.init(); print(c.rank, c.size, c.allgather('x'), c.bcast(5))"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    assert out.stdout == "0 1 ['x'] 5\n"


def rmarun(*args, timeout=60):
    return subprocess.run([sys.executable, "-m", "rma", *args], capture_output=True, text=True, timeout=timeout)


@pytest.mark.parametrize("provider", ["shm", "tcp"])
def test_rmarun_allgather_on_four_ranks(provider):
    out = rmarun(
        "-n",
        "4",
        "--provider",
        provider,
        sys.executable,
        "-c",
        "import rma; c = rma.init(); print(c.rank, c.allgather(c.rank))",
    )
    assert out.returncode == 0, out.stderr
    assert sorted(out.stdout.splitlines()) == [f"{r} [0, 1, 2, 3]" for r in range(4)]


def test_rmarun_ends_a_job_whose_rank_exits_during_a_barrier(tmp_path):
    code = textwrap.dedent(f"""
        import os, rma
        comm = rma.init()
        open(os.path.join({str(tmp_path)!r}, str(os.getpid())), "w").close()
        comm.barrier()
        if comm.rank == 2:
            os._exit(3)
        comm.barrier()
    """)
    start = time.monotonic()
    out = rmarun("-n", "4", "-c", code, timeout=30)
    assert time.monotonic() - start < 10
    assert out.returncode != 0
    assert "rank 2" in out.stderr
    pids = [int(name) for name in os.listdir(tmp_path)]
    assert len(pids) == 4
    time.sleep(0.2)
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    assert not [f for f in os.listdir("/dev/shm") if f.split(":")[0] in {str(p) for p in pids}]


def test_rmarun_shows_the_failing_ranks_traceback():
    code = "import rma\nc = rma.init()\nif c.rank == 1:\n    raise RuntimeError('boom on one')\nc.barrier()\n"
    out = rmarun("-n", "3", "-c", code, timeout=30)
    assert out.returncode != 0
    assert "rank 1" in out.stderr
    assert "RuntimeError: boom on one" in out.stderr


def test_ranks_stop_when_rmarun_is_killed(tmp_path):
    code = textwrap.dedent(f"""
        import os, time, rma
        comm = rma.init()
        open(os.path.join({str(tmp_path)!r}, str(os.getpid())), "w").close()
        time.sleep(60)
    """)
    launcher = subprocess.Popen(
        [sys.executable, "-m", "rma", "-n", "3", "-c", code], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 20
        while len(os.listdir(tmp_path)) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        pids = [int(name) for name in os.listdir(tmp_path)]
        assert len(pids) == 3
        launcher.kill()  # SIGKILL: rmarun cannot clean up
        launcher.wait(timeout=10)
        deadline = time.monotonic() + 10
        alive = pids
        while alive and time.monotonic() < deadline:
            time.sleep(0.05)
            alive = [pid for pid in pids if _alive(pid)]
        assert alive == []
    finally:
        launcher.kill()
        launcher.wait()


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(") ")[1][0] != "Z"  # a zombie has ended
    except FileNotFoundError:
        return False


def test_importing_rma_keeps_pythons_signal_handlers():
    # libfabric's dependency libinfinipath installs its own handlers when loaded.
    code = textwrap.dedent("""
        import os, signal, time, rma
        try:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(5)
        except KeyboardInterrupt:
            print("KeyboardInterrupt")
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    assert out.stdout == "KeyboardInterrupt\n"
    assert out.returncode == -15


def test_a_stale_shm_file_with_our_pid_does_not_stop_init():
    # A killed process leaves /dev/shm/<pid>:0:0 behind; a new rank may get the same pid.
    code = textwrap.dedent("""
        import os
        stale = f"/dev/shm/{os.getpid()}:0:0"
        with open(stale, "wb") as f:
            f.write(b"left by a dead process")
        import rma
        comm = rma.init()
        print(comm.allgather(comm.rank))  # the provider's own region now has that name
    """)
    env = {k: v for k, v in os.environ.items() if not k.startswith("RMA_")}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    assert out.stdout == "[0]\n"


MAPPED_ALONE = """
import ctypes, rma
class MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost".split()]
libc = ctypes.CDLL(None)
libc.mallinfo2.restype = MallInfo2
rma.init()
before = libc.mallinfo2().hblks
buffer = bytes(4 << 20)  # a large message's size
print(libc.mallinfo2().hblks - before)
"""


@pytest.mark.skipif("libasan" in os.environ.get("LD_PRELOAD", ""), reason="AddressSanitizer replaces malloc")
@pytest.mark.parametrize(
    "setting, mapped_alone",
    [
        ({}, 0),
        ({"RMA_MALLOC_TUNING": "1"}, 0),
        ({"RMA_MALLOC_TUNING": "0"}, 1),
        ({"GLIBC_TUNABLES": "glibc.malloc.trim_threshold=1000000"}, 1),
    ],
)
def test_rma_malloc_tuning_keeps_large_buffers_on_the_heap(setting, mapped_alone):
    # Mapped alone, every large message buffer is faulted in afresh (rma/_job/join.py says why).
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RMA_", "SLURM_", "PMI_", "OMPI_", "GLIBC_"))}
    out = subprocess.run(
        [sys.executable, "-c", MAPPED_ALONE], env={**env, **setting}, capture_output=True, text=True, timeout=30
    )
    assert out.returncode == 0, out.stderr
    assert int(out.stdout) == mapped_alone


def test_a_malloc_tuning_setting_that_does_not_exist_stops_init():
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RMA_", "SLURM_", "PMI_", "OMPI_"))}
    out = subprocess.run(
        [sys.executable, "-c", "import rma; rma.init()"],
        env={**env, "RMA_MALLOC_TUNING": "yes"},
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert out.returncode != 0 and "RMA_MALLOC_TUNING='yes': use 1 or 0" in out.stderr


@pytest.mark.parametrize(
    "launcher, says",
    [
        (
            {"SLURM_PROCID": "1", "SLURM_NTASKS": "4"},
            "runs under Slurm without PMIx: start the ranks with `srun --mpi=pmix`",
        ),
        ({"PMI_RANK": "1", "PMI_SIZE": "4"}, "was started by a launcher that speaks PMI, not PMIx (MPICH's mpiexec?)"),
        ({"RMA_RANK": "1", "RMA_SIZE": "4"}, "needs the rendezvous store: start it with `rmarun -n N ...`"),
    ],
)
def test_a_rank_of_several_with_no_way_to_meet_says_which_launcher_fell_short(launcher, says):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RMA_", "SLURM_", "PMI_", "PMIX_", "OMPI_"))}
    out = subprocess.run(
        [sys.executable, "-c", "import rma; rma.init()"],
        env={**env, **launcher},
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert out.returncode != 0
    assert f"BootstrapError: rma.init: a job of 4 ranks {says}" in out.stderr, out.stderr
