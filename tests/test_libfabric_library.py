"""RMA_LIBFABRIC: which libfabric a rank loads when it needs one (issue 43). `system` (the
default) is the one the dynamic loader finds; a path is a site's own build, loaded instead. What
a rank loaded is read from /proc/self/maps, not from what rma says; a bad value is one line, said
before any rank starts, and a library that is not a libfabric new enough is named with the way
back to the system's.
"""

import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from libfabric_ring import RING
from old_libfabric import old_libfabric
from processes import run_in_own_group

WAIT = 60


def environment(**settings):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RMA_", "FI_"))}
    env.update(settings)
    return env


def rmarun(tmp_path, ranks, **settings):
    script = tmp_path / "program.py"
    script.write_text(RING)
    argv = [sys.executable, "-m", "rma", "-n", str(ranks), sys.executable, str(script)]
    return run_in_own_group(argv, timeout=WAIT, env=environment(**settings))


@pytest.fixture(scope="module")
def system_library():
    """The file of the system's libfabric, as the dynamic loader resolves libfabric.so.1."""
    found = subprocess.run(
        [sys.executable, "-c", "import ctypes; ctypes.CDLL('libfabric.so.1'); print(open('/proc/self/maps').read())"],
        capture_output=True,
        text=True,
        timeout=WAIT,
    )
    files = {line.split()[-1] for line in found.stdout.splitlines() if "libfabric.so" in line}
    if found.returncode != 0 or len(files) != 1:
        pytest.skip(f"no system libfabric.so.1 to load: {found.stderr.strip()[-300:]}")
    return os.path.realpath(files.pop())


@pytest.mark.parametrize("ranks", [1, 2, 3])
def test_a_path_loads_that_library(tmp_path, system_library, ranks):
    # A site's own build stands in for the system's: a copy of it, elsewhere.
    own = tmp_path / "site" / "libfabric.so.1"
    own.parent.mkdir()
    shutil.copy(system_library, own)
    done = rmarun(tmp_path, ranks, RMA_PROVIDER="tcp", RMA_LIBFABRIC=str(own))
    assert done.returncode == 0, done.stderr
    lines = sorted(line for line in done.stdout.splitlines() if line.startswith("rank "))
    assert lines == [f"rank {rank}: mapped {[str(own)]}" for rank in range(ranks)], done.stdout


@pytest.mark.parametrize("value", ["", "system", " System "])
def test_system_loads_the_one_the_loader_finds(tmp_path, system_library, value):
    done = rmarun(tmp_path, 2, RMA_PROVIDER="tcp", RMA_LIBFABRIC=value)
    assert done.returncode == 0, done.stderr
    for line in (line for line in done.stdout.splitlines() if line.startswith("rank ")):
        mapped = eval(line.split("mapped ", 1)[1])  # (the list the rank printed)
        assert [os.path.realpath(name) for name in mapped] == [system_library], line


@pytest.mark.parametrize("value", ["bundled", "/no/such/libfabric.so.1", "."])
def test_a_bad_value_is_refused_in_one_line_before_any_rank_starts(tmp_path, value):
    marker = tmp_path / "started"
    script = tmp_path / "program.py"
    script.write_text(f"open({str(marker)!r}, 'a').close()\nimport rma\nrma.init()\n")
    argv = [sys.executable, "-m", "rma", "-n", "2", sys.executable, str(script)]
    done = run_in_own_group(argv, timeout=WAIT, env=environment(RMA_LIBFABRIC=value))
    assert done.returncode != 0 and not marker.exists(), done.stderr
    assert done.stderr.strip().splitlines() == [
        f"rmarun: RMA_LIBFABRIC={value!r}: use system or the path of a libfabric.so.1 "
        "(this install of rma, built from source, carries no libfabric of its own)"
    ], done.stderr
    # A rank that another launcher started judges it at rma.init(), in the same one line.
    done = run_in_own_group([sys.executable, str(script)], timeout=WAIT, env=environment(RMA_LIBFABRIC=value))
    assert done.returncode != 0 and done.stderr.strip().splitlines() == [
        f"rma: RMA_LIBFABRIC={value!r}: use system or the path of a libfabric.so.1 "
        "(this install of rma, built from source, carries no libfabric of its own)"
    ], done.stderr


def test_a_library_that_is_not_libfabric_is_named_with_the_way_back(tmp_path):
    # libc is a shared library with none of libfabric's entry points; a text file is none at all.
    libc = next(
        (
            path
            for path in ("/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib/x86_64-linux-gnu/libc.so.6")
            if os.path.exists(path)
        ),
        None,
    )
    if libc is None:
        pytest.skip("no libc.so.6 where Debian keeps it")
    done = rmarun(tmp_path, 2, RMA_PROVIDER="tcp", RMA_LIBFABRIC=libc)
    assert done.returncode != 0
    assert (
        f"rma: libfabric could not be loaded: RMA_LIBFABRIC: {libc} has no fi_getinfo@FABRIC_1.3 (libfabric "
        "1.17's interface). Ranks on several hosts, RMA_TRANSPORT=libfabric and RMA_PROVIDER need it: "
        "RMA_LIBFABRIC names it; unset it to use the system's" in done.stderr
    ), done.stderr
    text = tmp_path / "not-a-library.so"
    text.write_text("hello\n")
    done = rmarun(tmp_path, 2, RMA_PROVIDER="tcp", RMA_LIBFABRIC=str(text))
    assert done.returncode != 0
    assert f"rma: libfabric could not be loaded: RMA_LIBFABRIC: {text}: " in done.stderr, done.stderr
    assert "RMA_LIBFABRIC names it; unset it to use the system's" in done.stderr, done.stderr


def test_a_job_on_one_host_never_opens_the_named_library(tmp_path):
    # No provider asked for: the job needs no libfabric, so not even a bad library is touched.
    text = tmp_path / "not-a-library.so"
    text.write_text("hello\n")
    done = rmarun(tmp_path, 2, RMA_LIBFABRIC=str(text))
    assert done.returncode == 0, done.stderr
    assert all(line.endswith("mapped []") for line in done.stdout.splitlines() if line.startswith("rank ")), done.stdout


def test_info_names_the_library_and_why(tmp_path, system_library):
    done = run_in_own_group([sys.executable, "-m", "rma", "--info"], timeout=WAIT, env=environment())
    assert done.returncode == 0, done.stderr
    version_line = done.stdout.splitlines()[1]
    assert version_line.startswith("libfabric 1.") and version_line.endswith("(the system's)"), version_line
    assert os.path.realpath(version_line.split(": ", 1)[1].rsplit(" (", 1)[0]) == system_library, version_line
    own = tmp_path / "libfabric.so.1"
    shutil.copy(system_library, own)
    done = run_in_own_group(
        [sys.executable, "-m", "rma", "--info"], timeout=WAIT, env=environment(RMA_LIBFABRIC=str(own))
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[1].endswith(f": {own} (RMA_LIBFABRIC)"), done.stdout


@pytest.fixture(scope="module")
def old_library(tmp_path_factory):
    return old_libfabric(tmp_path_factory.mktemp("old-libfabric"))


def test_a_library_older_than_1_17_is_refused_with_its_version(tmp_path, old_library):
    done = rmarun(tmp_path, 2, RMA_PROVIDER="tcp", RMA_LIBFABRIC=str(old_library))
    assert done.returncode != 0
    assert (
        f"rma: libfabric could not be loaded: RMA_LIBFABRIC: {old_library} is libfabric 1.5; rma needs 1.17 or "
        "newer. Ranks on several hosts" in done.stderr
    ), done.stderr


# The order a rank tries libraries in (what RMA_LIBFABRIC's default gives the core: the system's,
# then a wheel's own): the first that loads and is new enough is used, and an error names each one
# tried, with why.
TRY_IN_ORDER = textwrap.dedent(
    """
    import sys
    from rma._native import _core
    _core.use_libfabric([tuple(reversed(pair.split("=", 1))) for pair in sys.argv[1:]])
    try:
        print(_core.libfabric_version(), _core.libfabric_origin(), _core.libfabric_path())
    except Exception as error:
        print("error:", error)
    with open("/proc/self/maps") as maps:
        print(sorted({line.split()[-1] for line in maps if "libfabric" in line}))
    """
)


def try_in_order(*candidates):
    done = subprocess.run(
        [sys.executable, "-c", TRY_IN_ORDER, *(f"{origin}={file}" for file, origin in candidates)],
        capture_output=True, text=True, timeout=WAIT, env=environment(),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    said, mapped = done.stdout.splitlines()
    return said, eval(mapped)


def test_the_first_library_that_loads_and_is_new_enough_is_used(tmp_path, system_library, old_library):
    missing = tmp_path / "missing" / "libfabric.so.1"
    said, mapped = try_in_order((str(missing), "bundled"), (str(old_library), "RMA_LIBFABRIC"), ("", "system"))
    version, origin, path = said.split()
    assert version.startswith("1.") and origin == "system", said
    assert [os.path.realpath(name) for name in mapped] == [system_library]  # (the old one closed again)
    assert os.path.realpath(path) == system_library
    # The system's first: the others are never opened.
    said, mapped = try_in_order(("", "system"), (str(old_library), "bundled"))
    assert said.split()[1] == "system" and [os.path.realpath(name) for name in mapped] == [system_library], said


def test_when_none_loads_the_error_names_each_one_tried(tmp_path, old_library):
    missing = tmp_path / "missing" / "libfabric.so.1"
    said, mapped = try_in_order((str(missing), "system"), (str(old_library), "bundled"))
    assert said == (
        f"error: rma: libfabric could not be loaded: the system's: {missing}: cannot open shared object file: No "
        f"such file or directory; rma's own: {old_library} is libfabric 1.5; rma needs 1.17 or newer. Ranks on "
        "several hosts, RMA_TRANSPORT=libfabric and RMA_PROVIDER need it: apt-get install libfabric1, or name one "
        "with RMA_LIBFABRIC=PATH"
    ), said
    assert mapped == []
