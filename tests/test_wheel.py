"""The wheel as a user meets it (issue 43): `pip install` into a fresh virtual environment on a
machine with no libfabric, no compiler, no CMake and no headers, then jobs that use the
libfabric the wheel carries.

The machine is made to look so by a private mount namespace (tests/without_build_tools.sh),
which each command here runs in; what a rank loaded is read from /proc/self/maps. Runs only
with `--wheel PATH` (./dev.sh test builds dist/rma-*.whl with ./dev.sh wheel and runs this file
with it); needs root, for the namespace.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import textwrap
import time
from pathlib import Path

import pytest

from libfabric_ring import RING
from old_libfabric import old_libfabric
from processes import run_in_own_group
from testbed import TestBed

REPO = Path(__file__).resolve().parent.parent
HIDE = Path(__file__).resolve().parent / "without_build_tools.sh"
WAIT = 300


@pytest.fixture(scope="module")
def wheel(request) -> Path:
    given = request.config.getoption("--wheel")
    if not given:
        pytest.skip("needs --wheel PATH: ./dev.sh test builds dist/rma-*.whl (./dev.sh wheel) and runs this with it")
    return Path(given).resolve()


def clean_environment(venv: Path | None = None, **settings: str) -> dict[str, str]:
    """A user's environment: none of rma's or libfabric's settings, the venv first on PATH."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RMA_", "FI_", "PYTHON", "VIRTUAL_ENV"))}
    env["PATH"] = ":".join(
        ([str(venv / "bin")] if venv else []) + ["/usr/local/bin", "/usr/bin", "/bin", "/usr/sbin", "/sbin"]
    )
    env.update(settings)
    return env


class Hidden:
    """Runs commands where no libfabric, compiler, CMake or header is visible."""

    def __init__(self, scratch: Path) -> None:
        self.scratch = scratch
        self.python_include = sysconfig.get_paths()["include"]

    def command(self, argv: list[str]) -> list[str]:
        return [
            "unshare", "--mount", "--propagation", "private", "--",
            "bash", str(HIDE), str(self.scratch), self.python_include, *argv,
        ]  # fmt: skip

    def run(self, argv: list[str], env: dict[str, str], timeout: float = WAIT) -> subprocess.CompletedProcess:
        return run_in_own_group(self.command(argv), timeout=timeout, env=env, cwd=str(REPO))


@pytest.fixture(scope="module")
def hidden(tmp_path_factory) -> Hidden:
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("needs root and unshare, to hide the machine's libfabric and build tools in a mount namespace")
    hidden = Hidden(tmp_path_factory.mktemp("hidden-scratch"))
    probe = hidden.run(["true"], clean_environment(), timeout=60)
    if probe.returncode != 0:
        pytest.skip(f"the kernel refuses the mounts that hide libfabric and the build tools: {probe.stderr.strip()}")
    return hidden


@pytest.fixture(scope="module")
def venv(wheel, hidden, tmp_path_factory) -> Path:
    """A fresh venv with the wheel (and pytest, for the suites), installed where nothing could build."""
    venv = tmp_path_factory.mktemp("user") / "venv"
    made = hidden.run([sys.executable, "-m", "venv", str(venv)], clean_environment())
    assert made.returncode == 0, made.stderr
    started = time.monotonic()
    installed = hidden.run(
        [str(venv / "bin/python"), "-m", "pip", "install", "-q", "--only-binary=:all:", str(wheel)],
        clean_environment(venv),
    )
    took = time.monotonic() - started
    assert installed.returncode == 0, installed.stdout + installed.stderr
    tools = hidden.run(
        [str(venv / "bin/python"), "-m", "pip", "install", "-q", "pytest", "hypothesis"], clean_environment(venv)
    )
    assert tools.returncode == 0, tools.stdout + tools.stderr
    print(f"\nthe wheel ({wheel.stat().st_size // 1024} KiB) installed in {took:.1f} s, its dependencies included")
    return venv


def test_nothing_that_builds_or_libfabric_is_visible(hidden, venv):
    probe = textwrap.dedent(
        """
        import ctypes, glob, shutil, sysconfig
        print([tool for tool in ("gcc", "g++", "cc", "c++", "cmake", "ninja") if shutil.which(tool)])
        try:
            ctypes.CDLL("libfabric.so.1")
            print("libfabric loads")
        except OSError:
            print("no libfabric")
        print(glob.glob("/usr/include/*") + glob.glob(sysconfig.get_paths()["include"] + "/*"))
        """
    )
    done = hidden.run([str(venv / "bin/python"), "-c", probe], clean_environment(venv))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["[]", "no libfabric", "[]"], done.stdout


def test_import_and_info_name_rmas_own_libfabric(hidden, venv):
    started = time.monotonic()
    done = hidden.run([str(venv / "bin/python"), "-c", "import rma, rma._native"], clean_environment(venv))
    took = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    print(f"\nimport rma in {took:.2f} s (a new interpreter in a new namespace included)")
    done = hidden.run([str(venv / "bin/python"), "-m", "rma", "--info"], clean_environment(venv))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    own = next((venv / "lib").glob("python*/site-packages/rma/_libfabric/libfabric.so.1"))
    assert lines[1].startswith("libfabric 1.") and lines[1].endswith(f": {own} (rma's own)"), lines[1]
    usable = lines[2].split(": ", 1)[1].split(", ")
    assert "tcp;ofi_rxm" in usable and "shm" in usable, lines[2]


def test_the_demo_runs_at_4_ranks_on_shared_memory_and_on_rmas_own_libfabric(hidden, venv):
    for settings in ({}, {"RMA_TRANSPORT": "libfabric"}):
        done = hidden.run(
            [str(venv / "bin/rmarun"), "-n", "4", str(REPO / "examples/bulletin_board.py")],
            clean_environment(venv, **settings),
        )
        assert done.returncode == 0, (settings, done.stderr)
        assert "bulletin board: OK" in done.stdout, (settings, done.stdout)


@pytest.mark.parametrize("ranks", [1, 2, 3])
def test_a_job_through_libfabric_maps_rmas_own(hidden, venv, tmp_path, ranks):
    script = tmp_path / "ring.py"
    script.write_text(RING)
    done = hidden.run(
        [str(venv / "bin/rmarun"), "-n", str(ranks), str(venv / "bin/python"), str(script)],
        clean_environment(venv, RMA_PROVIDER="tcp"),
    )
    assert done.returncode == 0, done.stderr
    own = str(next((venv / "lib").glob("python*/site-packages/rma/_libfabric/libfabric.so.1")))
    lines = sorted(line for line in done.stdout.splitlines() if line.startswith("rank "))
    assert lines == [f"rank {rank}: mapped {[own]}" for rank in range(ranks)], done.stdout


# The window, PSCW and passive-target suites, their tests not marked slow, with every rank's
# windows and messages through the wheel's libfabric.
SUITES = ["tests/test_window.py", "tests/test_pscw.py", "tests/test_passive.py"]


def test_the_window_pscw_and_passive_suites_pass_on_rmas_own_libfabric(hidden, venv):
    done = hidden.run(
        [str(venv / "bin/python"), "-m", "pytest", "-p", "no:cacheprovider", "-o", "addopts=--strict-markers -ra",
         "-q", "-x", "-m", "not slow", "-k", "not shared-memory", *SUITES],
        clean_environment(venv, RMA_TRANSPORT="libfabric"),
        timeout=1200,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert " passed" in done.stdout.splitlines()[-1], done.stdout[-500:]


def test_a_job_across_two_test_bed_hosts_on_rmas_own_libfabric(hidden, venv):
    refusal = TestBed.refusal()
    if refusal:
        pytest.skip(refusal)
    done = hidden.run(
        [str(venv / "bin/python"), "-m", "pytest", "-p", "no:cacheprovider", "-o", "addopts=--strict-markers -ra",
         "-q", "-x", "--testbed-hosts", "2", "--testbed-spanning", "-m", "not slow", "-k", "not libfabric-shm",
         "tests/test_passive.py"],
        clean_environment(venv),
        timeout=1200,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert " passed" in done.stdout.splitlines()[-1], done.stdout[-500:]


@pytest.fixture(scope="module")
def system_library() -> str:
    """The file of the machine's own libfabric, as the dynamic loader resolves libfabric.so.1."""
    system = subprocess.run(
        [sys.executable, "-c", "import ctypes; ctypes.CDLL('libfabric.so.1'); print(open('/proc/self/maps').read())"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    files = {os.path.realpath(line.split()[-1]) for line in system.stdout.splitlines() if "libfabric.so" in line}
    if system.returncode != 0 or len(files) != 1:
        pytest.skip(f"no system libfabric here: {system.stderr.strip()[-300:]}")
    return files.pop()


def test_rma_libfabric_system_selects_the_machines_own_outside(venv, tmp_path, system_library):
    # Outside the namespace the system's libfabric is there: the default and `system` take it.
    files = {system_library}
    script = tmp_path / "ring.py"
    script.write_text(RING)
    for settings in ({"RMA_LIBFABRIC": "system"}, {}):
        done = run_in_own_group(
            [str(venv / "bin/rmarun"), "-n", "2", str(venv / "bin/python"), str(script)],
            timeout=WAIT,
            env=clean_environment(venv, RMA_PROVIDER="tcp", **settings),
        )
        assert done.returncode == 0, (settings, done.stderr)
        for line in (line for line in done.stdout.splitlines() if line.startswith("rank ")):
            mapped = eval(line.split("mapped ", 1)[1])
            assert {os.path.realpath(name) for name in mapped} == files, (settings, line)
    done = run_in_own_group(
        [str(venv / "bin/python"), "-m", "rma", "--info"],
        timeout=WAIT,
        env=clean_environment(venv, RMA_LIBFABRIC="bundled"),
    )
    assert done.returncode == 0 and done.stdout.splitlines()[1].endswith("(rma's own)"), done.stdout + done.stderr


def test_a_system_libfabric_older_than_1_17_gives_way_to_rmas_own(venv, tmp_path, system_library):
    # The system's file replaced (in a mount namespace of this test only) by one that says 1.5.
    old = old_libfabric(tmp_path)
    done = run_in_own_group(
        ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c",
         'mount --bind "$0" "$1" && exec "$2" -m rma --info', str(old), system_library, str(venv / "bin/python")],
        timeout=WAIT, env=clean_environment(venv),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[1].endswith("(rma's own)"), done.stdout
