"""A job on one host moves everything through shared memory and never loads libfabric (which
costs each process about 0.2 s to load: src/core/fabric/libfabric_library.hpp). Only a job that
spans hosts, RMA_TRANSPORT=libfabric, or a provider named in RMA_PROVIDER opens a libfabric
endpoint (rma._job.join.needs_fabric).

Each job here moves data through every kind of window, including transfers large enough that
a job with an endpoint would write them natively through the fabric, and a rank then reports
whether libfabric is mapped into its process: what /proc/self/maps says, not what rma believes.
"""

import os
import subprocess
import sys
import textwrap

import pytest

from processes import run_in_own_group

WAIT = 60

PROGRAM = textwrap.dedent(
    """
    import ctypes, os
    import numpy as np
    import rma

    comm = rma.init()
    rank, size = comm.rank, comm.size
    if os.environ.get("TEST_NON_DUMPABLE") and rank == size - 1:
        # Without CAP_SYS_PTRACE (the test drops it), nobody may process_vm_writev into this
        # rank now: its create() window is reached the other way, through messages.
        assert ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0) == 0  # PR_SET_DUMPABLE, 0
    count = 64 * 1024 // 8  # int64s: four times the size the fabric would write natively
    right, left = (rank + 1) % size, (rank - 1) % size
    routes = set()
    for kind in ("allocate", "create", "allocate_shared"):
        if kind == "create":
            memory = np.zeros(count, np.int64)
            win = rma.Window.create(comm, memory)
        else:
            win = getattr(rma.Window, kind)(comm, count, np.int64)
            memory = win.local
        with win.fence():
            win.put(np.arange(count, dtype=np.int64) * (rank + 1), right)
        assert (memory == np.arange(count) * (left + 1)).all(), (kind, memory[:4])
        back = np.zeros(count, np.int64)
        with win.lock(right):
            win.get(back, right)
        assert (back == np.arange(count) * (rank + 1)).all(), (kind, back[:4])
        strided = np.zeros(8, np.int64)
        with win.lock(right, rma.LOCK_SHARED):
            win.get(strided, right, target=np.s_[: 8 * 3 : 3])
        assert list(strided) == [3 * i * (rank + 1) for i in range(8)], (kind, strided)
        with win.fence():
            win.accumulate(np.full(4, 10, np.int64), right, 1)
        assert list(memory[1:5]) == [(left + 1) * i + 10 for i in range(1, 5)], (kind, memory[:6])
        routes.add(win.transport_to(right))
        win.free()
    dynamic = rma.Window.create_dynamic(comm)
    area = np.zeros(count, np.int64)
    where = comm.allgather(dynamic.attach(area))
    with dynamic.fence():
        dynamic.put(np.full(count, rank + 7, np.int64), right, where[right])
    assert (area == left + 7).all(), area[:4]
    routes.add(dynamic.transport_to(right))
    dynamic.detach(area)
    dynamic.free()
    with open("/proc/self/maps") as maps:
        mapped = "libfabric.so" in maps.read()
    print(f"rank {rank}: moved, libfabric mapped: {mapped}, routes: {sorted(routes)}", flush=True)
    """
)


def run(tmp_path, argv_prefix, ranks, env_extra=None):
    script = tmp_path / "program.py"
    script.write_text(PROGRAM)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RMA_", "FI_"))}
    env.update(env_extra or {})
    if ranks is None:  # plain python: a job of one rank
        argv = [*argv_prefix, sys.executable, str(script)]
    else:
        argv = [*argv_prefix, sys.executable, "-m", "rma", "-n", str(ranks), sys.executable, str(script)]
    done = run_in_own_group(argv, timeout=WAIT, env=env)
    assert done.returncode == 0, done.stderr
    lines = sorted(line for line in done.stdout.splitlines() if line.startswith("rank "))
    assert len(lines) == (ranks or 1), done.stdout
    return lines


@pytest.mark.parametrize("ranks", [None, 1, 2, 3, 4])
def test_a_job_on_one_host_never_loads_libfabric(tmp_path, ranks):
    for line in run(tmp_path, [], ranks):
        assert "libfabric mapped: False" in line and "routes: ['shared-memory']" in line, line


@pytest.mark.parametrize(
    "setting", [{"RMA_TRANSPORT": "libfabric"}, {"RMA_PROVIDER": "shm"}, {"RMA_PROVIDER": "tcp"}], ids=str
)
def test_asking_for_libfabric_on_one_host_loads_it(tmp_path, setting):
    for line in run(tmp_path, [], 2, setting):
        assert "libfabric mapped: True" in line, line
    if "RMA_TRANSPORT" in setting:  # (allocate_shared's segments are mapped whatever the setting)
        assert all("routes: ['libfabric', 'shared-memory']" in line for line in run(tmp_path, [], 3, setting))


@pytest.mark.parametrize("ranks", [2, 3])
def test_a_target_nobody_may_copy_into_is_reached_through_messages(tmp_path, ranks):
    # As root, process_vm_writev may write into any process; without CAP_SYS_PTRACE, not into a
    # non-dumpable one. A job with an endpoint then writes the large transfers through the
    # fabric; one without sends them as messages that the target copies in.
    drop = ["setpriv", "--bounding-set", "-sys_ptrace", "--inh-caps", "-sys_ptrace"]
    probe = subprocess.run([*drop, "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(f"setpriv cannot drop CAP_SYS_PTRACE here: {probe.stderr.strip()}")
    lines = run(tmp_path, drop, ranks, {"TEST_NON_DUMPABLE": "1"})
    for line in lines:
        assert "libfabric mapped: False" in line, line


SIGNALS_AFTER_LOADING = textwrap.dedent(
    """
    import faulthandler, os, signal, sys
    import rma
    from rma._native import _core

    faulthandler.enable()
    before = {n: signal.getsignal(n) for n in (signal.SIGINT, signal.SIGTERM, signal.SIGSEGV, signal.SIGBUS)}
    rma.init()  # RMA_PROVIDER names a provider: libfabric loads here
    assert _core.libfabric_loaded()
    after = {n: signal.getsignal(n) for n in before}
    assert after == before, (before, after)
    try:
        os.kill(os.getpid(), signal.SIGINT)
    except KeyboardInterrupt:
        print("KeyboardInterrupt", flush=True)
    rma.finalize()  # (SIGTERM's default action ends the process before it could clean /dev/shm)
    os.kill(os.getpid(), signal.SIGTERM)
    """
)


def test_loading_libfabric_keeps_the_signal_handlers(tmp_path):
    # Debian's libfabric loads libinfinipath, whose constructor takes SIGINT, SIGTERM, SIGSEGV
    # and SIGBUS: Ctrl-C and SIGTERM would then exit 1 rather than raise or end by the signal.
    script = tmp_path / "signals.py"
    script.write_text(SIGNALS_AFTER_LOADING)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RMA_", "FI_"))}
    env["RMA_PROVIDER"] = "shm"
    done = run_in_own_group([sys.executable, str(script)], timeout=WAIT, env=env)
    assert done.stdout == "KeyboardInterrupt\n", done.stderr
    assert done.returncode == -15, done.stderr  # SIGTERM's default: the process ends by it
