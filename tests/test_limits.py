"""Limits of the machine met while making windows: an error that names them, on every rank.

Window memory is taken when the window is made (posix_fallocate), so a window larger than
/dev/shm raises rma.OutOfMemoryError at Window.allocate instead of killing the rank with SIGBUS
at its first store (a container's /dev/shm is 64 MiB). The tests give a job a /dev/shm of 64
MiB of its own: a tmpfs mounted in a mount namespace (unshare, as root), listed at the end from
inside that namespace, which must hold nothing then. The other limits (open files, memory
mappings) are lowered inside the rank itself.

Every job runs in a subprocess with a deadline: a rank that waited for a failed one would hang.
"""

import functools
import os
import subprocess
import sys
import textwrap

import pytest

from processes import run_in_own_group

WAIT = 60.0
RMARUN = [sys.executable, "-m", "rma"]

# A process out of descriptors or mappings fails inside the sanitizers' runtimes too (./dev.sh
# preloads them for its ASan pass): UndefinedBehaviorSanitizer checks a type through a pipe of its
# own, and AddressSanitizer maps memory for its allocator. The limit tests leave them out.
SANITIZED = pytest.mark.skipif(
    "libasan" in os.environ.get("LD_PRELOAD", ""), reason="the sanitizers need descriptors and mappings of their own"
)

# Each rank asks for its share of 100 MiB and writes it all, then reports what it got. Every
# rank prints before any ends (the barrier): rmarun stops the others when one ends in error.
ALLOCATE_100_MIB = """
import sys, numpy as np, rma
comm = rma.init()
try:
    win = rma.Window.allocate(comm, (100 << 20) // comm.size, np.uint8)
    win.local[:] = 1
    print(f"rank {comm.rank}: wrote {win.nbytes} bytes", flush=True)
    win.free()
except rma.RMAError as exc:
    print(f"rank {comm.rank}: {type(exc).__name__} (MemoryError: {isinstance(exc, MemoryError)}): {exc}", flush=True)
    comm.barrier()
    sys.exit(3)
"""

# What the shell in the namespace prints after the job: its exit status, then /dev/shm.
AFTER_JOB = 'echo "exit status $?"; echo "/dev/shm holds:"; ls -A /dev/shm'


def environment():
    env = dict(os.environ)
    # Through libfabric (RMA_TRANSPORT=libfabric) a window's memory is private, not in /dev/shm.
    env.pop("RMA_TRANSPORT", None)
    return env


@functools.cache
def namespaces_refused() -> str | None:
    """Why a mount namespace with a tmpfs of its own cannot be made here, or None."""
    try:
        probe = subprocess.run(
            ["unshare", "--mount", "--propagation", "private", "sh", "-c", "mount -t tmpfs -o size=1m tmpfs /dev/shm"],
            capture_output=True,
            text=True,
            timeout=WAIT,
        )
    except FileNotFoundError:
        return "needs unshare (util-linux)"
    if probe.returncode != 0:
        return f"cannot mount a tmpfs in a mount namespace (needs root): {probe.stderr.strip()}"
    return None


def with_small_dev_shm(argv, tmp_path):
    """Run argv with a /dev/shm of 64 MiB of its own; return its output and what the shell
    printed after it: (output, exit status, files left in that /dev/shm)."""
    why = namespaces_refused()
    if why:
        pytest.skip(why)
    script = f'mount -t tmpfs -o size=64m tmpfs /dev/shm && "$@"; {AFTER_JOB}'
    run = run_in_own_group(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", *argv],
        timeout=WAIT,
        env=environment(),
        cwd=tmp_path,
    )
    job_stdout, _, after = run.stdout.rpartition("exit status ")
    status, _, listing = after.partition("/dev/shm holds:")
    return job_stdout + run.stderr, int(status.split()[0]), listing.split()


def program(tmp_path, text):
    path = tmp_path / "job.py"
    path.write_text(textwrap.dedent(text))
    return str(path)


def assert_named_on_every_rank(output, size):
    """Every rank raised rma.OutOfMemoryError (a MemoryError) naming /dev/shm's size and how to
    raise it; none wrote, none died of a signal."""
    assert "SIGBUS" not in output and "Bus error" not in output, output
    for rank in range(size):
        lines = [line for line in output.splitlines() if f"rank {rank}: " in line and "Error" in line]
        assert lines, f"rank {rank} raised nothing:\n{output}"
        line = lines[0]
        assert f"rank {rank}: OutOfMemoryError (MemoryError: True): rma: Window.allocate on rank {rank}" in line, line
        assert "/dev/shm holds 64.0 MiB" in line, line
        assert "mount -o remount,size=" in line and "docker run --shm-size=" in line, line
    assert "wrote" not in output, output


@pytest.mark.parametrize("size", [1, 2, 3])
def test_a_window_larger_than_dev_shm_raises_on_every_rank(tmp_path, size):
    output, status, left = with_small_dev_shm(
        [*RMARUN, "-n", str(size), "--tag-output", program(tmp_path, ALLOCATE_100_MIB)], tmp_path
    )
    assert status != 0, output
    assert_named_on_every_rank(output, size)
    # The rank whose memory could not be had says why; the others name it.
    assert "cannot reserve" in output and "No space left on device" in output, output
    assert left == [], f"left in /dev/shm: {left}\n{output}"


def test_a_window_larger_than_dev_shm_raises_in_plain_python(tmp_path):
    # No launcher to clean up after the process: what it leaves stays.
    output, status, left = with_small_dev_shm([sys.executable, program(tmp_path, ALLOCATE_100_MIB)], tmp_path)
    assert status == 3, output
    assert_named_on_every_rank(output, 1)
    assert left == [], f"left in /dev/shm: {left}\n{output}"


# The last rank takes every file descriptor its RLIMIT_NOFILE allows, then makes a window whose
# memory needs a new segment (a size no earlier window had, so none is kept for it).
OPEN_FILES = """
import os, resource, sys, numpy as np, rma
comm = rma.init()
rma.Window.allocate(comm, 4096, np.uint8).free()  # (imports what creation needs, while it can)
held = []
if comm.rank == comm.size - 1:
    highest = max(int(fd) for fd in os.listdir("/proc/self/fd"))
    resource.setrlimit(resource.RLIMIT_NOFILE, (highest + 8, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
    try:
        while True:
            held.append(os.open("/dev/null", os.O_RDONLY))
    except OSError:
        pass
try:
    rma.Window.allocate(comm, 1 << 20, np.uint8)
    print(f"rank {comm.rank}: made", flush=True)
except rma.RMAError as exc:
    print(f"rank {comm.rank}: {type(exc).__name__}: {exc}", flush=True)
for fd in held:
    os.close(fd)
comm.barrier()
"""


@SANITIZED
@pytest.mark.parametrize("size", [1, 2])
def test_the_open_files_limit_is_named(tmp_path, size):
    job = program(tmp_path, OPEN_FILES)
    argv = [sys.executable, job] if size == 1 else [*RMARUN, "-n", str(size), job]
    run = run_in_own_group(argv, timeout=WAIT, env=environment(), cwd=tmp_path)
    output = run.stdout + run.stderr
    assert run.returncode == 0, output
    last = size - 1
    line = next(line for line in run.stdout.splitlines() if line.startswith(f"rank {last}: "))
    assert line.startswith(f"rank {last}: RMAError: rma: Window.allocate on rank {last} ("), line
    assert "Too many open files" in line and "RLIMIT_NOFILE allows" in line and "ulimit -n" in line, line
    assert "0 other windows are open in this process" in line, line
    for rank in range(last):  # the others raise too, naming the rank that could not
        line = next(line for line in run.stdout.splitlines() if line.startswith(f"rank {rank}: "))
        assert f"rank {last} could not make its part of the window: " in line and "RLIMIT_NOFILE" in line, line


# The rank leaves itself only a few of the mappings vm.max_map_count allows (each page of a
# reserved region made readable in turn splits it: two mappings more), then makes windows,
# none freed, until one cannot be mapped.
MAP_COUNT = """
import ctypes, mmap, numpy as np, rma

def mappings():
    with open("/proc/self/maps", "rb") as f:
        return f.read().count(b"\\n")

comm = rma.init()
rma.Window.allocate(comm, 4096, np.uint8).free()  # (imports what creation needs)
limit = int(open("/proc/sys/vm/max_map_count").read())
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
page = mmap.PAGESIZE
left = 8
pages = limit - mappings() + 2
# (PROT_NONE, 0: address space only, no memory.)
base = libc.mmap(None, pages * page, 0, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, -1, 0)
assert base not in (None, ctypes.c_void_p(-1).value)
at = 1

def split(count):
    global at
    for _ in range(count):
        assert libc.mprotect(base + at * page, page, mmap.PROT_READ) == 0, ctypes.get_errno()
        at += 2

split(max((limit - mappings() - left) // 2 - 50, 0))
while mappings() < limit - left:
    split(1)
windows = []
try:
    while len(windows) < 100:
        windows.append(rma.Window.allocate(comm, 4096 * (len(windows) + 2), np.uint8))
    print("rank 0: no error", flush=True)
except rma.RMAError as exc:
    print(f"rank 0: {type(exc).__name__} (MemoryError: {isinstance(exc, MemoryError)}) after {len(windows)}: {exc}")
"""


@SANITIZED
def test_the_map_count_limit_is_named(tmp_path):
    job = program(tmp_path, MAP_COUNT)
    run = run_in_own_group([sys.executable, job], timeout=WAIT, env=environment(), cwd=tmp_path)
    output = run.stdout + run.stderr
    assert run.returncode == 0, output
    line = next(line for line in run.stdout.splitlines() if line.startswith("rank 0: "))
    assert line.startswith("rank 0: OutOfMemoryError (MemoryError: True) after "), line
    opened = int(line.split(" after ")[1].split(":")[0])
    assert "rma: Window.allocate on rank 0 (" in line and "Cannot allocate memory" in line, line
    assert "memory mappings and vm.max_map_count allows" in line and "sysctl vm.max_map_count=" in line, line
    assert f"({opened} other window{'s are' if opened != 1 else ' is'} open in this process)" in line, line
